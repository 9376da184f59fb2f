// include/rlx/io/npy.hpp -- read and write NumPy .npy files (format 1.0, 2.0, 3.0; C order).
#pragma once

#include "rlx/buffer.hpp"

#include <string>
#include <string_view>

namespace rlx::io {

/// Parse the bytes of a .npy file into a Buffer. Supported dtypes (little-endian or byte-order
/// free): <f4 <f8 <f2 <i1 <i2 <i4 <i8 |u1 <u4 |b1 <c8 ('|', '<' and '=' spellings). Malformed
/// input (bad magic, truncated or non-dict header, missing keys, bad shape, unknown or big-endian
/// dtype, data of the wrong length) throws rlx::Error (ErrorKind::Parse) whose message starts with
/// `<source>: `; Fortran-ordered arrays of rank >= 2 throw ErrorKind::Unsupported (for rank <= 1
/// both orders are the same bytes). Bool bytes other than 0 read
/// as true.
Buffer read_npy(std::string_view bytes, std::string_view source = "<npy>");

/// Read a .npy file; ErrorKind::Io when it cannot be read, otherwise as read_npy (source = path).
Buffer load_npy(const std::string& path);

/// The .npy bytes of a buffer (version 1.0, or 2.0 when the header needs it; the header is padded
/// so that the data starts at a multiple of 64 bytes). BF16 has no NumPy dtype: ErrorKind::
/// Unsupported.
std::string write_npy(const Buffer& buffer);

/// Write write_npy(buffer) to a file; ErrorKind::Io when it cannot be written.
void save_npy(const std::string& path, const Buffer& buffer);

} // namespace rlx::io
