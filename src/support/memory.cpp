// src/support/memory.cpp -- Storage, the process-wide pool of large blocks, the memory limit.
#include "rlx/memory.hpp"

#include "rlx/error.hpp"
#include "rlx/ir/lir.hpp"

#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <unistd.h>

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
    return {.bytes_in_use = in_use_, .bytes_cached = cached_, .reuses = reuses_, .fresh = fresh_};
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

constexpr std::size_t kNoLimit = std::numeric_limits<std::size_t>::max();

std::size_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return kNoLimit;
  return std::size_t(pages) * std::size_t(page);
}

std::size_t limit_from_environment() {
  const char* env = std::getenv("RLX_MAX_MEMORY");
  if (env == nullptr || *env == '\0') return physical_memory();
  if (std::string_view(env) == "off") return kNoLimit;
  if (std::optional<std::size_t> n = detail::parse_byte_size(env)) return *n;
  std::fprintf(stderr,
               "rlx: warning: RLX_MAX_MEMORY='%s' is not a size (bytes, or 8G, 512M, ...); "
               "using the physical memory as the limit\n",
               env);
  return physical_memory();
}

std::atomic<std::size_t>& limit_bytes() {
  static std::atomic<std::size_t> limit{limit_from_environment()};
  return limit;
}

/// Bytes of all live storage (pooled blocks by their size class).
std::atomic<std::size_t> g_live{0};

std::string limit_str(std::size_t limit) {
  return limit == kNoLimit ? std::string("none") : ir::human_bytes(limit);
}

/// Count n more live bytes, or throw ErrorKind::Limit (counting nothing) when they would pass
/// the limit.
void reserve(std::size_t n) {
  std::size_t limit = limit_bytes().load(std::memory_order_relaxed);
  std::size_t before = n > limit ? 0 : g_live.fetch_add(n, std::memory_order_relaxed);
  if (n <= limit && before <= limit - n) return;
  if (n <= limit) g_live.fetch_sub(n, std::memory_order_relaxed);
  std::size_t in_use = g_live.load(std::memory_order_relaxed);
  fail(ErrorKind::Limit, "memory limit: a tensor of ", ir::human_bytes(n), " does not fit (",
       ir::human_bytes(in_use), " in use, limit ", limit_str(limit),
       "); raise the limit with RLX_MAX_MEMORY (e.g. RLX_MAX_MEMORY=64G) or "
       "set_memory_limit(bytes) in C++");
}

/// A small block: malloc'd with room to align it, the malloc'd address kept just before the
/// aligned one. glibc before 2.38 serves aligned requests (operator new with an alignment)
/// outside its per-thread cache, at several times the cost; these are the outputs of small
/// kernels, one or more per Executable::run.
std::byte* allocate_small(std::size_t n) {
  void* raw = std::malloc(n + kAlign);
  if (raw == nullptr) throw std::bad_alloc();
  // malloc aligns to 16, so the aligned address is 16 to 64 bytes in: room for the pointer.
  auto at = (reinterpret_cast<std::uintptr_t>(raw) + kAlign) & ~std::uintptr_t(kAlign - 1);
  reinterpret_cast<void**>(at)[-1] = raw;
  return reinterpret_cast<std::byte*>(at);
}
void deallocate_small(std::byte* p) { std::free(reinterpret_cast<void**>(p)[-1]); }

std::byte* allocate(std::size_t n) {
  if (n == 0) return nullptr;
  // Requests too large for a size class are over any limit; reserve() rejects them.
  std::size_t counted = n < kPooledMin || n > (kNoLimit >> 2) ? n : size_class(n);
  reserve(counted);
  try {
    if (n < kPooledMin) return allocate_small(n);
    return pool().take(counted);
  } catch (...) {
    g_live.fetch_sub(counted, std::memory_order_relaxed);
    throw;
  }
}

void deallocate(std::byte* p, std::size_t n) {
  if (!p) return;
  if (n < kPooledMin) {
    g_live.fetch_sub(n, std::memory_order_relaxed);
    deallocate_small(p);
    return;
  }
  g_live.fetch_sub(size_class(n), std::memory_order_relaxed);
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
    if (!owner_) deallocate(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    owner_ = std::move(other.owner_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Storage::~Storage() {
  if (!owner_) deallocate(data_, size_); // external bytes go back through their owner
}

Storage Storage::external(std::byte* data, std::size_t n, std::shared_ptr<void> owner) {
  RLX_CHECK(reinterpret_cast<std::uintptr_t>(data) % kAlign == 0,
            "Storage::external: ", static_cast<const void*>(data), " is not ", kAlign,
            "-byte aligned");
  Storage s;
  s.data_ = data;
  s.size_ = n;
  // Without an owner the caller keeps the bytes alive; a no-op owner still marks them external.
  s.owner_ = owner ? std::move(owner) : std::shared_ptr<void>(data, [](void*) {});
  return s;
}

bool operator==(const Storage& a, const Storage& b) {
  return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_) == 0);
}

MemoryStats memory_stats() {
  MemoryStats s = pool().stats();
  s.bytes_live = g_live.load(std::memory_order_relaxed);
  return s;
}

void set_memory_limit(std::size_t bytes) { limit_bytes().store(bytes); }
std::size_t memory_limit() { return limit_bytes().load(); }

namespace detail {

void check_memory_budget(uint64_t bytes, std::string_view what) {
  std::size_t limit = memory_limit();
  if (bytes <= limit) return;
  fail(ErrorKind::Limit, what, " needs ", ir::human_bytes(bytes), ", over the memory limit of ",
       limit_str(limit),
       "; raise the limit with RLX_MAX_MEMORY (e.g. RLX_MAX_MEMORY=64G) or "
       "set_memory_limit(bytes) in C++");
}

std::optional<std::size_t> parse_byte_size(std::string_view text) {
  double value = -1;
  const char* end = text.data() + text.size();
  auto [rest, ec] = std::from_chars(text.data(), end, value, std::chars_format::fixed);
  if (ec != std::errc() || !(value >= 0)) return std::nullopt;
  std::string unit(rest, end);
  for (char& c : unit) c = char(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (!unit.empty()) {
    std::size_t power = std::string_view("kmgt").find(unit[0]);
    if (power == std::string_view::npos) return std::nullopt;
    scale = std::ldexp(1.0, 10 * int(power + 1));
    unit.erase(0, 1);
    if (unit != "" && unit != "b" && unit != "ib") return std::nullopt; // 8G, 8GB, 8GiB
  }
  double bytes = std::floor(value * scale);
  if (!(bytes < 0x1p63)) return std::nullopt;
  return std::size_t(bytes);
}

} // namespace detail
void release_cached_memory() { pool().release(); }
void set_memory_pool_limit(std::size_t bytes) { pool().set_limit(bytes); }

} // namespace rlx
