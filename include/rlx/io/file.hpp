// include/rlx/io/file.hpp -- reading a whole file, with the errors every file reader gives.
#pragma once

#include <string>
#include <string_view>

namespace rlx::io {

/// The bytes of the file at `path`. ErrorKind::Io when it is a directory ("cannot read '<path>':
/// it is a directory"), cannot be opened ("cannot open '<path>': <reason>") or fails while read;
/// the message starts with `what` and ": " when `what` is not empty (e.g. "npy").
std::string read_file(const std::string& path, std::string_view what = {});

} // namespace rlx::io
