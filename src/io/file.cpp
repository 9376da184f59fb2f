// src/io/file.cpp -- read_file: the one place that reads a whole file (npy, ONNX, the CLI).
#include "rlx/io/file.hpp"

#include "rlx/error.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace rlx::io {

std::string read_file(const std::string& path, std::string_view what) {
  const std::string prefix = what.empty() ? std::string() : std::string(what) + ": ";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(ErrorKind::Io, prefix, "cannot read '", path, "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, prefix, "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(ErrorKind::Io, prefix, "error while reading '", path, "'");
  return ss.str();
}

} // namespace rlx::io
