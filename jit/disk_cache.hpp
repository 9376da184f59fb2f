// jit/disk_cache.hpp -- compiled kernels as object code on disk, one file per key (no LLVM here).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlx::jit::disk {

/// A kernel's key: a 256-bit digest of its unoptimized IR and of everything that shapes the
/// machine code (target, CPU, features, rlx and LLVM versions).
using Key = std::array<uint8_t, 32>;

/// Version of the entry layout below; a file with another version is rejected.
inline constexpr uint32_t kFormatVersion = 1;
/// Every entry starts with this header (little-endian), then `payload_size` bytes of object code:
///   [0, 8)   magic "RLXKOBJ\n"
///   [8, 12)  format version (kFormatVersion)
///   [12, 16) header size (kHeaderSize)
///   [16, 48) key
///   [48, 56) payload size
///   [56, 64) FNV-1a 64 of the payload
inline constexpr std::size_t kHeaderSize = 64;

/// The directory holding the entries of this rlx version, or "" when the disk cache is off.
/// Starts from the environment: RLX_CACHE_DIR ("off" disables), else $XDG_CACHE_HOME/rlx, else
/// $HOME/.cache/rlx; the entries go in a subdirectory named after the rlx version.
std::string directory();
/// The root directory as configured ("" when off), and a new one ("" or "off" disables).
std::string root();
void set_root(const std::string& dir);

/// The file of a key: <directory>/<64 hex digits>.o.
std::string entry_path(const std::string& dir, const Key& key);
std::string to_hex(std::span<const uint8_t> bytes);

uint64_t fnv1a64(std::span<const char> bytes);

/// A complete entry (header and payload) for a key.
std::vector<char> encode(const Key& key, std::span<const char> payload);

struct Loaded {
  enum class Status : uint8_t { Hit, Miss, Rejected };
  Status status = Status::Miss;
  std::vector<char> payload; ///< the object code (Hit)
  std::string reason;        ///< why an entry was rejected
};
/// Read and check the entry of `key` in `dir`: a missing file is a Miss; a short, corrupt or
/// foreign one (magic, version, key, size, checksum) is Rejected and never returned.
Loaded load(const std::string& dir, const Key& key);

/// Write the entry atomically (a unique temporary file in the same directory, then rename), so
/// readers and racing writers only ever see complete files. False on any I/O error (the cache
/// is an optimization; nothing is thrown).
bool store(const std::string& dir, const Key& key, std::span<const char> payload);

} // namespace rlx::jit::disk
