// jit/library.cpp -- the registry of native runtime kernels (jit/library.hpp): one table, in
// the order entries are asked. FFTW runs fft nodes (src/runtime/fftw_kernels.cpp), attention
// runs on the GEMM (jit/attention.cpp).
#include "library.hpp"

#include "attention.hpp"
#include "runtime/fftw_kernels.hpp"

#include <array>

namespace rlx::jit {

namespace {

bool fftw_takes(const ir::Graph&, const ir::Node& n) { return runtime::fftw_handles(n); }

std::vector<ir::NodeId> operands(const ir::Graph&, const ir::Node& n) { return n.inputs; }

class FftwCall final : public LibraryCall {
public:
  explicit FftwCall(const ir::Node& n) : node_(n) { runtime::fftw_prepare(n); }
  void run(const std::byte* const* reads, std::byte* out) const override {
    runtime::fftw_run(node_, reads[0], out);
  }

private:
  ir::Node node_;
};

std::unique_ptr<LibraryCall> fftw_call(const ir::Graph&, const ir::Node& n) {
  return std::make_unique<FftwCall>(n);
}

constexpr std::array kLibrary = {
    LibraryKernel{"fftw", fftw_takes, operands, fftw_call},
    LibraryKernel{"attention", attention_handles, attention_reads, attention_prepare},
};

} // namespace

const LibraryKernel* find_library_kernel(const ir::Graph& g, const ir::Node& n) {
  for (const LibraryKernel& k : kLibrary)
    if (k.handles(g, n)) return &k;
  return nullptr;
}

bool library_view(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op.kind() != ir::OpKind::Narrow || !n.shape.is_static() || n.shape.rank() == 0)
    return false;
  const ir::Shape& x = g.shape(n.inputs[0]);
  if (!x.is_static()) return false;
  int64_t axis = n.op.attrs<ir::NarrowAttrs>().axis;
  int64_t rank = int64_t(x.rank());
  return axis == rank - 1 || axis == -1;
}

RowView row_view(const ir::Graph& g, ir::NodeId id) {
  if (!library_view(g, id)) {
    const ir::Shape& s = g.shape(id);
    return {id, 0, s.rank() ? s.sizes().back() : 1};
  }
  const ir::Node& n = g.node(id);
  return {n.inputs[0], n.op.attrs<ir::NarrowAttrs>().start, g.shape(n.inputs[0]).sizes().back()};
}

} // namespace rlx::jit
