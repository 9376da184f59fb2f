// include/rlx/io/file.hpp -- reading a whole file, with the errors every file reader gives.
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <string_view>

namespace rlx::io {

/// The largest file read_file reads by default (4 GiB): graphs, .npy and ONNX files beyond it
/// are refused before anything is read.
inline constexpr std::size_t kMaxFileBytes = std::size_t(1) << 32;

/// The bytes of the regular file at `path`. ErrorKind::Io when it cannot be opened ("cannot open
/// '<path>': <reason>"), is not a regular file (a directory, FIFO, socket or device such as
/// /dev/zero: refused at once, without reading or waiting), is larger than `max_bytes`, or fails
/// while read; ErrorKind::Limit when its size is over the memory limit (rlx/memory.hpp). The
/// message starts with `what` and ": " when `what` is not empty (e.g. "npy").
std::string read_file(const std::string& path, std::string_view what = {},
                      std::size_t max_bytes = kMaxFileBytes);

/// Everything left in `in` (standard input, a pipe), at most `max_bytes`: ErrorKind::Io when
/// there is more or reading fails. `name` names the stream in messages ("standard input").
std::string read_stream(std::istream& in, std::string_view name, std::string_view what = {},
                        std::size_t max_bytes = kMaxFileBytes);

} // namespace rlx::io
