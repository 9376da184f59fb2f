// src/dist/serial.cpp -- the transport of a build without MPI: the job is this one process, so
// every collective is a copy and there is no peer to send to.
#include "comm.hpp"

#include <cstdlib>
#include <cstring>

namespace rlx::dist::detail {

int rank() { return 0; }
int size() { return 1; }
bool is_mpi() { return false; }
void start() {}
bool started() { return false; }
void barrier(std::string_view) {}
void stop() {}
void abort_job(int code) { std::_Exit(code); }

void all_reduce(void*, int64_t, ir::DType, ir::CollectiveOp, std::string_view) {}
void all_reduce_into(const void* in, void* out, int64_t count, ir::DType t, ir::CollectiveOp,
                     std::string_view) {
  if (in != out) std::memcpy(out, in, std::size_t(count) * ir::size_bytes(t));
}
void all_gather(const void* in, void* out, int64_t bytes, std::string_view) {
  std::memcpy(out, in, std::size_t(bytes));
}
void reduce_scatter_sum(const void* in, void* out, int64_t count, ir::DType t, std::string_view) {
  std::memcpy(out, in, std::size_t(count) * ir::size_bytes(t));
}
void broadcast(void*, int64_t, int, std::string_view) {}
void reduce_sum(const void* in, void* out, int64_t count, ir::DType t, int, std::string_view) {
  std::memcpy(out, in, std::size_t(count) * ir::size_bytes(t));
}
void start_all_reduce(void*, int64_t, ir::DType, ir::CollectiveOp, std::string_view) {}
void start_all_gather(const void* in, void* out, int64_t bytes, std::string_view what) {
  all_gather(in, out, bytes, what);
}
void start_reduce_scatter_sum(const void* in, void* out, int64_t count, ir::DType t,
                              std::string_view what) {
  reduce_scatter_sum(in, out, count, t, what);
}
void start_broadcast(void*, int64_t, int, std::string_view) {}
void start_reduce_sum(const void* in, void* out, int64_t count, ir::DType t, int root,
                      std::string_view what) {
  reduce_sum(in, out, count, t, root, what);
}
void wait(const void*, std::string_view) {}
void send_to(const void*, int64_t, int, int, std::string_view what) {
  fail(ErrorKind::Unsupported, what, ": this rlx is built without MPI; there is no other rank");
}
void recv_from(void*, int64_t, int, int, std::string_view what) {
  fail(ErrorKind::Unsupported, what, ": this rlx is built without MPI; there is no other rank");
}
void start_send_to(const void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  send_to(x, bytes, peer, tag, what);
}
void start_recv_from(void* x, int64_t bytes, int peer, int tag, std::string_view what) {
  recv_from(x, bytes, peer, tag, what);
}

} // namespace rlx::dist::detail
