// src/support/memory.cpp -- Storage and the process-wide pool of large blocks.
#include "rlx/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace rlx {

namespace {

constexpr std::size_t kAlign = 64;
/// Blocks below this size come from operator new (the C library keeps them warm itself).
constexpr std::size_t kPooledMin = std::size_t(1) << 16;

/// Size classes: four per power of two (at most 25% slack), in 4 KiB pages.
std::size_t size_class(std::size_t n) {
  std::size_t pages = (n + 4095) / 4096;
  std::size_t top = 1;
  while (top * 2 <= pages) top *= 2;
  std::size_t step = top >= 4 ? top / 4 : 1;
  return ((pages + step - 1) / step) * step * 4096;
}

class Pool {
public:
  Pool() {
    if (const char* env = std::getenv("RLX_POOL_BYTES")) limit_ = std::strtoull(env, nullptr, 10);
  }

  std::byte* take(std::size_t cls) {
    {
      std::lock_guard lock(mu_);
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        std::byte* p = it->second.back();
        it->second.pop_back();
        forget_order(p);
        cached_ -= cls;
        in_use_ += cls;
        ++reuses_;
        return p;
      }
      in_use_ += cls;
      ++fresh_;
    }
    return static_cast<std::byte*>(::operator new(cls, std::align_val_t(kAlign)));
  }

  void give(std::byte* p, std::size_t cls) {
    std::deque<std::pair<std::byte*, std::size_t>> evicted;
    {
      std::lock_guard lock(mu_);
      in_use_ -= cls;
      free_[cls].push_back(p);
      order_.emplace_back(p, cls);
      cached_ += cls;
      while (cached_ > limit_ && !order_.empty()) {
        auto [q, c] = order_.front();
        order_.pop_front();
        auto& list = free_[c];
        for (auto it = list.begin(); it != list.end(); ++it)
          if (*it == q) {
            list.erase(it);
            break;
          }
        cached_ -= c;
        evicted.emplace_back(q, c);
      }
    }
    for (auto [q, c] : evicted) ::operator delete(q, c, std::align_val_t(kAlign));
  }

  void release() {
    std::deque<std::pair<std::byte*, std::size_t>> all;
    {
      std::lock_guard lock(mu_);
      all.swap(order_);
      free_.clear();
      cached_ = 0;
    }
    for (auto [q, c] : all) ::operator delete(q, c, std::align_val_t(kAlign));
  }

  MemoryStats stats() {
    std::lock_guard lock(mu_);
    return {in_use_, cached_, reuses_, fresh_};
  }

  void set_limit(std::size_t bytes) {
    {
      std::lock_guard lock(mu_);
      limit_ = bytes;
    }
    if (bytes == 0) release();
  }

private:
  void forget_order(std::byte* p) {
    for (auto it = order_.end(); it != order_.begin();) {
      --it;
      if (it->first == p) {
        order_.erase(it);
        return;
      }
    }
  }

  std::mutex mu_;
  std::map<std::size_t, std::vector<std::byte*>> free_;
  std::deque<std::pair<std::byte*, std::size_t>> order_; ///< kept blocks, oldest first
  std::size_t limit_ = std::size_t(1) << 30;
  std::size_t cached_ = 0, in_use_ = 0;
  uint64_t reuses_ = 0, fresh_ = 0;
};

/// Never destroyed: tensors held by other statics free their storage at exit.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

std::byte* allocate(std::size_t n) {
  if (n == 0) return nullptr;
  if (n < kPooledMin) return static_cast<std::byte*>(::operator new(n, std::align_val_t(kAlign)));
  return pool().take(size_class(n));
}

void deallocate(std::byte* p, std::size_t n) {
  if (!p) return;
  if (n < kPooledMin) {
    ::operator delete(p, n, std::align_val_t(kAlign));
    return;
  }
  pool().give(p, size_class(n));
}

} // namespace

Storage::Storage(std::size_t n, bool zero) : data_(allocate(n)), size_(n) {
  if (zero && n) std::memset(data_, 0, n);
}

Storage::Storage(const Storage& other) : data_(allocate(other.size_)), size_(other.size_) {
  if (size_) std::memcpy(data_, other.data_, size_);
}

Storage& Storage::operator=(const Storage& other) {
  if (this != &other) *this = Storage(other);
  return *this;
}

Storage& Storage::operator=(Storage&& other) noexcept {
  if (this != &other) {
    deallocate(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Storage::~Storage() { deallocate(data_, size_); }

bool operator==(const Storage& a, const Storage& b) {
  return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_) == 0);
}

MemoryStats memory_stats() { return pool().stats(); }
void release_cached_memory() { pool().release(); }
void set_memory_pool_limit(std::size_t bytes) { pool().set_limit(bytes); }

} // namespace rlx
