// include/rlx/memory.hpp -- tensor storage: 64-byte aligned bytes from a process-wide pool.
//
// Large blocks are kept when freed and handed out again for the next request of the same size
// class, so a program that computes tensors of the same sizes call after call touches warm
// memory instead of page-faulting fresh pages from the kernel on every call (on a VM a fault
// costs tens of microseconds per 4 KiB page). Small blocks come from operator new directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rlx {

/// Owned bytes with value semantics (copies copy the contents), 64-byte aligned.
class Storage {
public:
  Storage() = default;
  /// n bytes, zero-filled unless `zero` is false (then the contents are unspecified).
  explicit Storage(std::size_t n, bool zero = true);
  Storage(const Storage& other);
  Storage(Storage&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
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
};

/// What the pool holds: blocks handed out and kept for reuse, and how often a request was
/// served from the kept blocks.
struct MemoryStats {
  std::size_t bytes_in_use{}; ///< pooled blocks currently owned by tensors
  std::size_t bytes_cached{}; ///< freed pooled blocks kept for reuse
  uint64_t reuses{};          ///< requests served from kept blocks
  uint64_t fresh{};           ///< requests that allocated new pooled blocks
};
MemoryStats memory_stats();

/// Give every kept block back to the system.
void release_cached_memory();

/// The most freed memory the pool keeps (default 1 GiB; RLX_POOL_BYTES overrides it). Blocks
/// beyond it are freed, the least recently kept first.
void set_memory_pool_limit(std::size_t bytes);

} // namespace rlx
