// src/frontend/small_vec.hpp -- SmallVec: a vector whose first few elements live inside it.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace rlx::detail {

/// A vector whose first N elements live inside it, so the usual few need no allocation (a
/// recorded op's nodes, a jit call's leaves and shapes). Past N, every element is on the heap.
template <class T, std::size_t N> class SmallVec {
public:
  void push_back(T v) {
    if (size_ < N) {
      inline_[size_++] = std::move(v);
      return;
    }
    if (size_ == N) {
      heap_.reserve(2 * N);
      for (T& x : inline_) heap_.push_back(std::move(x));
    }
    heap_.push_back(std::move(v));
    ++size_;
  }
  /// Keep the first n elements (n <= size()).
  void truncate(std::size_t n) {
    if (size_ <= N) {
      for (std::size_t i = n; i < size_; ++i) inline_[i] = T();
    } else if (n > N) {
      heap_.erase(heap_.begin() + std::ptrdiff_t(n), heap_.end());
    } else {
      for (std::size_t i = 0; i < n; ++i) inline_[i] = std::move(heap_[i]);
      heap_.clear();
    }
    size_ = n;
  }
  void clear() { truncate(0); }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return size_ <= N ? inline_[i] : heap_[i]; }
  const T& operator[](std::size_t i) const { return size_ <= N ? inline_[i] : heap_[i]; }
  std::span<const T> span() const {
    return size_ <= N ? std::span<const T>(inline_.data(), size_) : std::span<const T>(heap_);
  }

private:
  std::array<T, N> inline_{};
  std::size_t size_ = 0;
  std::vector<T> heap_; ///< every element once size_ > N
};

} // namespace rlx::detail
