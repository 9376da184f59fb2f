// include/rlx/memory.hpp -- tensor storage: 64-byte aligned bytes from a process-wide pool.
//
// Every allocation is checked against the memory limit (set_memory_limit, RLX_MAX_MEMORY): a
// tensor that would not fit is an rlx::Error (ErrorKind::Limit) before anything is allocated,
// not an out-of-memory kill. Large blocks are kept when freed and handed out again for the next
// request of the same size class, so a program that computes tensors of the same sizes call after
// call touches warm memory instead of page-faulting fresh pages from the kernel on every call (on a
// VM a fault costs tens of microseconds per 4 KiB page). Small blocks come from operator new
// directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace rlx {

/// Owned bytes with value semantics (copies copy the contents), 64-byte aligned. External
/// storage (Tensor::from_blob) refers to the user's memory instead: `owner` keeps it alive and
/// its destruction returns it (the user's deleter); copies of it are pooled copies.
class Storage {
public:
  Storage() = default;
  /// n bytes, zero-filled unless `zero` is false (then the contents are unspecified).
  /// ErrorKind::Limit when n, or n plus the bytes all storage holds, exceeds memory_limit().
  explicit Storage(std::size_t n, bool zero = true);
  Storage(const Storage& other);
  Storage(Storage&& other) noexcept
      : data_(other.data_), size_(other.size_), owner_(std::move(other.owner_)) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  /// n bytes at data, owned by `owner` (nothing is copied or counted against the memory limit).
  /// data must be 64-byte aligned, as every kernel may assume.
  static Storage external(std::byte* data, std::size_t n, std::shared_ptr<void> owner);
  /// Whether the bytes are the user's (external) rather than the pool's.
  bool is_external() const { return owner_ != nullptr; }
  Storage& operator=(const Storage& other);
  Storage& operator=(Storage&& other) noexcept;
  ~Storage();

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  operator std::span<std::byte>() { return {data_, size_}; }
  operator std::span<const std::byte>() const { return {data_, size_}; }
  friend bool operator==(const Storage& a, const Storage& b);

private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<void> owner_; ///< set for external storage
};

/// What the pool holds: blocks handed out and kept for reuse, and how often a request was
/// served from the kept blocks.
struct MemoryStats {
  std::size_t bytes_live{};   ///< all storage currently owned (what memory_limit() bounds)
  std::size_t bytes_in_use{}; ///< pooled blocks currently owned by tensors
  std::size_t bytes_cached{}; ///< freed pooled blocks kept for reuse
  uint64_t reuses{};          ///< requests served from kept blocks
  uint64_t fresh{};           ///< requests that allocated new pooled blocks
};
MemoryStats memory_stats();

/// Give every kept block back to the system.
void release_cached_memory();

/// The most bytes tensor storage may hold at once. Default: RLX_MAX_MEMORY when set (bytes, or
/// with a suffix K, M, G or T for powers of 1024: "8G", "512M"), else the machine's physical
/// memory; "off" means no limit. An allocation that would pass it throws rlx::Error
/// (ErrorKind::Limit) naming the sizes. Blocks the pool keeps for reuse do not count.
void set_memory_limit(std::size_t bytes);
std::size_t memory_limit();

namespace detail {
/// ErrorKind::Limit ("<what> needs 16 GiB, over the memory limit ...") when `bytes` exceed
/// memory_limit(): planners call it with the size they plan before allocating anything.
void check_memory_budget(uint64_t bytes, std::string_view what);
/// Bytes written as RLX_MAX_MEMORY takes them ("4096", "8G", "512M", "1.5T"); nullopt when
/// malformed or too large.
std::optional<std::size_t> parse_byte_size(std::string_view text);
} // namespace detail

/// The most freed memory the pool keeps (default 1 GiB; RLX_POOL_BYTES overrides it). Blocks
/// beyond it are freed, the least recently kept first.
void set_memory_pool_limit(std::size_t bytes);

} // namespace rlx
