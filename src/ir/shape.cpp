// src/ir/shape.cpp -- Dim, Shape and DimBinding, and the process-wide symbol name table.
#include "rlx/ir/shape.hpp"

#include "rlx/error.hpp"
#include "rlx/ir/lir.hpp"
#include "support/size_math.hpp"

#include <algorithm>
#include <mutex>
#include <sstream>

namespace rlx::ir {

namespace {

struct SymbolTable {
  std::mutex mu;
  std::vector<std::string> names{"batch", "seq", "rows", "past_seq"};
};

SymbolTable& symbols() {
  static SymbolTable table;
  return table;
}

} // namespace

uint32_t symbol_id(std::string_view name) {
  if (name.empty()) fail(ErrorKind::Value, "dynamic dimension: a symbol name must not be empty");
  auto& t = symbols();
  std::lock_guard lock(t.mu);
  for (std::size_t i = 0; i < t.names.size(); ++i)
    if (t.names[i] == name) return uint32_t(i);
  t.names.emplace_back(name);
  return uint32_t(t.names.size() - 1);
}

std::string symbol_name(uint32_t id) {
  auto& t = symbols();
  std::lock_guard lock(t.mu);
  return id < t.names.size() ? t.names[id] : std::string();
}

Dim::Dim(int64_t size) : size_(size) {
  if (size < 0) fail(ErrorKind::Value, "dimension sizes must be >= 0, got ", size);
  if (size > kMaxDimSize)
    fail(ErrorKind::Value, "dimension size ", size, " is too large (limit 2^48)");
}

Dim Dim::dynamic(uint32_t symbol) {
  Dim d;
  d.symbol_ = symbol;
  return d;
}

int64_t Dim::size() const {
  RLX_CHECK(is_static(), "size() of dynamic dim ", to_string(*this));
  return size_;
}

uint32_t Dim::symbol() const {
  RLX_CHECK(is_dynamic(), "symbol() of static dim ", size_);
  return uint32_t(symbol_);
}

std::string to_string(const Dim& d) {
  if (d.is_static()) return std::to_string(d.size());
  std::string name = symbol_name(d.symbol());
  return "?" + (name.empty() ? std::to_string(d.symbol()) : name);
}

std::ostream& operator<<(std::ostream& os, const Dim& d) { return os << to_string(d); }

Shape Shape::of(std::span<const int64_t> dims, DType dtype) {
  std::vector<Dim> v;
  v.reserve(dims.size());
  for (int64_t d : dims) v.emplace_back(d);
  return Shape(std::move(v), dtype);
}

const Dim& Shape::dim(int64_t i) const {
  int64_t r = int64_t(rank());
  int64_t j = i < 0 ? i + r : i;
  RLX_CHECK(j >= 0 && j < r, "dim ", i, " of a rank-", r, " shape");
  return dims_[std::size_t(j)];
}

bool Shape::is_static() const {
  return std::all_of(dims_.begin(), dims_.end(), [](const Dim& d) { return d.is_static(); });
}

void Shape::check_size() const {
  int64_t per = int64_t(ir::size_bytes(dtype_));
  int64_t nonzero = per;
  for (const Dim& d : dims_) {
    if (d.is_dynamic() || d.size() == 0) continue;
    std::optional<int64_t> p = rlx::detail::checked_mul(nonzero, d.size());
    if (!p || *p > kMaxTensorBytes) {
      // The size for the message, in floating point: it may not fit in any integer type.
      double bytes = double(per);
      for (const Dim& e : dims_)
        if (e.is_static() && e.size() != 0) bytes *= double(e.size());
      std::string size =
          bytes < 0x1p63 ? human_bytes(uint64_t(bytes)) : rlx::detail::cat(bytes, " B");
      fail(ErrorKind::Limit, "shape ", short_str(*this), " is too large: ", size,
           " (one tensor may hold at most 2^48 bytes = 256 TiB, empty ones counting their "
           "nonzero dims)");
    }
    nonzero = *p;
  }
}

std::optional<int64_t> Shape::num_elements() const {
  int64_t n = 1;
  for (const Dim& d : dims_) {
    if (d.is_dynamic()) return std::nullopt;
    // check_size keeps the product of the nonzero dims within kMaxTensorBytes.
    std::optional<int64_t> p = rlx::detail::checked_mul(n, d.size());
    RLX_CHECK(p, "element count of ", short_str(*this), " overflows");
    n = *p;
  }
  return n;
}

std::optional<int64_t> Shape::size_bytes() const {
  auto n = num_elements();
  if (!n) return std::nullopt;
  return *n * int64_t(ir::size_bytes(dtype_));
}

std::vector<int64_t> Shape::sizes() const {
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const Dim& d : dims_) out.push_back(d.size());
  return out;
}

Shape Shape::with_dim(std::size_t i, Dim d) const {
  RLX_CHECK(i < rank(), "with_dim ", i, " of rank ", rank());
  Shape s = *this;
  s.dims_[i] = d;
  s.check_size();
  return s;
}

std::vector<uint32_t> Shape::dynamic_symbols() const {
  std::vector<uint32_t> out;
  for (const Dim& d : dims_)
    if (d.is_dynamic()) out.push_back(d.symbol());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Shape Shape::bind(const DimBinding& b) const {
  Shape s = *this;
  for (Dim& d : s.dims_)
    if (d.is_dynamic())
      if (auto size = b.get(d.symbol())) d = Dim(*size);
  s.check_size();
  return s;
}

std::string to_string(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.rank(); ++i) {
    if (i) out += ", ";
    out += to_string(s.dims()[i]);
  }
  out += "] ";
  out += dtype_name(s.dtype());
  return out;
}

std::string short_str(const Shape& s) {
  std::string out(dtype_name(s.dtype()));
  out += "[";
  for (std::size_t i = 0; i < s.rank(); ++i) {
    if (i) out += ",";
    out += to_string(s.dims()[i]);
  }
  return out + "]";
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << to_string(s); }

DimBinding::DimBinding(std::initializer_list<std::pair<uint32_t, int64_t>> pairs) {
  for (auto [s, n] : pairs) set(s, n);
}

DimBinding DimBinding::from_pairs(std::span<const std::pair<uint32_t, int64_t>> pairs) {
  DimBinding b;
  for (auto [s, n] : pairs) b.set(s, n);
  return b;
}

DimBinding DimBinding::batch_seq(int64_t batch, int64_t seq) {
  DimBinding b;
  b.set(sym::kBatch, batch).set(sym::kSeq, seq);
  std::optional<int64_t> rows = rlx::detail::checked_mul(batch, seq);
  if (!rows || *rows > kMaxDimSize)
    fail(ErrorKind::Bind, "bind: batch ", batch, " * seq ", seq, " is out of range [0, 2^48]");
  return b.set(sym::kRows, *rows);
}

DimBinding& DimBinding::set(uint32_t symbol, int64_t size) {
  if (size < 0 || size > kMaxDimSize)
    fail(ErrorKind::Bind, "bind: size ", size, " for ?",
         symbol_name(symbol).empty() ? std::to_string(symbol) : symbol_name(symbol),
         " is out of range [0, 2^48]");
  map_[symbol] = size;
  return *this;
}

std::optional<int64_t> DimBinding::get(uint32_t symbol) const {
  auto it = map_.find(symbol);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

} // namespace rlx::ir
