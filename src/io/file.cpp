// src/io/file.cpp -- read_file: the one place that reads a whole file (text IR, JSON, npy, ONNX,
// the CLI). Only regular files of a bounded size are read, with their size known up front.
#include "rlx/io/file.hpp"

#include "rlx/error.hpp"
#include "rlx/memory.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rlx::io {

namespace {

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "it is a directory";
  if (S_ISFIFO(mode)) return "it is a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "it is a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "it is a device";
  return "it is not a regular file";
}

/// Closes a file descriptor when the reading ends, also by an exception.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

} // namespace

std::string read_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  const std::string prefix = what.empty() ? std::string() : std::string(what) + ": ";
  // O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused below).
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (f.fd < 0) fail(ErrorKind::Io, prefix, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st{};
  if (::fstat(f.fd, &st) != 0)
    fail(ErrorKind::Io, prefix, "cannot read '", path, "': ", std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(ErrorKind::Io, prefix, "cannot read '", path, "': ", file_type(st.st_mode));
  std::size_t size = std::size_t(st.st_size);
  if (size > max_bytes)
    fail(ErrorKind::Io, prefix, "cannot read '", path, "': it has ", size, " bytes, more than the ",
         max_bytes, " this reader takes");
  detail::check_memory_budget(size, prefix + "reading '" + path + "'");
  std::string data(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(f.fd, data.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      fail(ErrorKind::Io, prefix, "error while reading '", path, "': ", std::strerror(errno));
    if (n == 0) break; // the file shrank while read: what is there
    got += std::size_t(n);
  }
  data.resize(got);
  return data;
}

std::string read_stream(std::istream& in, std::string_view name, std::string_view what,
                        std::size_t max_bytes) {
  const std::string prefix = what.empty() ? std::string() : std::string(what) + ": ";
  std::string data;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    std::size_t n = std::size_t(in.gcount());
    if (n > max_bytes - data.size())
      fail(ErrorKind::Io, prefix, "cannot read ", name, ": more than the ", max_bytes,
           " bytes this reader takes");
    data.append(buf, n);
  }
  if (in.bad()) fail(ErrorKind::Io, prefix, "cannot read ", name);
  return data;
}

} // namespace rlx::io
