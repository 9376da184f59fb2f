// src/frontend/tensor.cpp -- Tensor handles: queries, reading data, printing, .npy files.
#include "frontend/format.hpp"
#include "frontend/impl.hpp"

#include "rlx/io/npy.hpp"

namespace rlx {

namespace detail {

FrameMutex& eval_mutex() {
  static FrameMutex mu;
  return mu;
}

std::shared_ptr<TensorImpl> make_computed(Buffer buffer, Loc loc) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = buffer.shape();
  impl->buffer = std::make_shared<const Buffer>(std::move(buffer));
  impl->loc = loc;
  return impl;
}

void check_defined(const Tensor& t, std::string_view what, const Loc& loc) {
  if (!t.defined())
    fail(ErrorKind::Value, what, ": the tensor is undefined (a default-constructed Tensor)",
         at_loc(loc));
}

void fail_traced_read(const Tensor& t, std::string_view what, const Loc& loc) {
  fail(ErrorKind::Trace, what, ": cannot read the value of a traced tensor ",
       ir::short_str(t.shape()),
       " inside rlx::jit: its data exists only when the compiled function runs. Keep "
       "data-dependent choices in the graph (rlx::where), or read the value outside the jitted "
       "function",
       at_loc(loc));
}

} // namespace detail

using detail::TensorImpl;

Tensor::Tensor() = default;
Tensor::Tensor(Buffer buffer) : impl_(detail::make_computed(std::move(buffer))) {}

Tensor Tensor::from_bytes(DType dtype, Dims sizes, std::span<const std::byte> bytes, Loc loc) {
  for (int64_t s : sizes)
    if (s < 0)
      fail(ErrorKind::Shape, "tensor: negative size ", s, " in the sizes", detail::at_loc(loc));
  Shape shape = Shape::of(sizes, dtype);
  Buffer b(shape);
  if (b.bytes().size() != bytes.size())
    fail(ErrorKind::Shape, "tensor: ", bytes.size() / ir::size_bytes(dtype), " values for shape ",
         ir::short_str(shape), " (", b.numel(), " elements)", detail::at_loc(loc));
  std::copy(bytes.begin(), bytes.end(), b.bytes().begin());
  if (dtype == DType::Bool)
    for (std::byte& x : b.bytes()) x = x != std::byte{0} ? std::byte{1} : std::byte{0};
  return Tensor(detail::make_computed(std::move(b), loc));
}

Tensor Tensor::from_blob(void* data, Dims sizes, DType dtype, std::function<void(void*)> deleter,
                         Loc loc) {
  for (int64_t s : sizes)
    if (s < 0)
      fail(ErrorKind::Shape, "from_blob: negative size ", s, " in the sizes", detail::at_loc(loc));
  Shape shape = Shape::of(sizes, dtype);
  const int64_t n = *shape.num_elements();
  if (n > 0 && data == nullptr)
    fail(ErrorKind::Value, "from_blob: a null pointer for ", ir::short_str(shape),
         detail::at_loc(loc));
  auto* bytes = static_cast<std::byte*>(data);
  const std::size_t size = std::size_t(n) * ir::size_bytes(dtype);
  if (dtype == DType::Bool || reinterpret_cast<std::uintptr_t>(data) % 64 != 0) {
    Tensor t = from_bytes(dtype, std::move(sizes), {bytes, size}, loc);
    if (deleter) deleter(data);
    return t;
  }
  std::shared_ptr<void> owner;
  if (deleter) owner = std::shared_ptr<void>(data, std::move(deleter));
  return Tensor(detail::make_computed(Buffer::external(shape, bytes, std::move(owner)), loc));
}

bool Tensor::shares_memory(const void* data) const {
  if (!impl_) return false;
  std::lock_guard lock(detail::eval_mutex());
  const auto& b = impl_->buffer;
  return b && b->is_external() && static_cast<const void*>(b->bytes().data()) == data;
}

const Shape& Tensor::shape() const {
  detail::check_defined(*this, "shape", Loc::current());
  return impl_->shape;
}
DType Tensor::dtype() const { return shape().dtype(); }
int64_t Tensor::ndim() const { return int64_t(shape().rank()); }

Dims Tensor::sizes(Loc loc) const {
  const Shape& s = shape();
  if (!s.is_static())
    fail(ErrorKind::Shape, "sizes: ", ir::short_str(s),
         " has a dynamic dim whose size is only known when the jitted function runs",
         detail::at_loc(loc));
  return s.sizes();
}

int64_t Tensor::numel(Loc loc) const {
  int64_t n = 1;
  for (int64_t s : sizes(loc)) n *= s;
  return n;
}

int64_t Tensor::size(int64_t axis, Loc loc) const {
  const Shape& s = shape();
  int64_t r = int64_t(s.rank());
  if (axis < -r || axis >= r)
    fail(ErrorKind::Value, "size: axis ", axis, " is out of range for ", ir::short_str(s),
         detail::at_loc(loc));
  const ir::Dim& d = s.dims()[std::size_t(axis < 0 ? axis + r : axis)];
  if (d.is_dynamic())
    fail(ErrorKind::Shape, "size: axis ", axis, " of ", ir::short_str(s),
         " is dynamic; its size is only known when the jitted function runs", detail::at_loc(loc));
  return d.size();
}

bool Tensor::is_materialized() const {
  if (!impl_) return false;
  std::lock_guard lock(detail::eval_mutex());
  return impl_->buffer != nullptr;
}

bool Tensor::is_traced() const { return impl_ && impl_->trace != 0; }

const Buffer& Tensor::buffer(Loc loc) const {
  detail::check_defined(*this, "read", loc);
  if (impl_->trace != 0) detail::fail_traced_read(*this, "reading data", loc);
  {
    std::lock_guard lock(detail::eval_mutex());
    if (impl_->buffer) return *impl_->buffer;
  }
  std::shared_ptr<TensorImpl> root = impl_;
  detail::materialize(std::span(&root, 1), loc);
  std::lock_guard lock(detail::eval_mutex());
  RLX_CHECK(impl_->buffer != nullptr, "materialize left a root pending");
  return *impl_->buffer;
}

void Tensor::check_dtype(DType want, const char* what, const Loc& loc) const {
  if (dtype() != want)
    fail(ErrorKind::Type, what, ": the tensor is ", ir::short_str(shape()), " but ",
         ir::dtype_name(want), " was requested (use to_vector<T>() to convert, or cast())",
         detail::at_loc(loc));
}

void Tensor::check_single(const char* what, const Loc& loc) const {
  detail::check_defined(*this, what, loc);
  if (impl_->trace != 0) detail::fail_traced_read(*this, what, loc);
  if (numel(loc) != 1)
    fail(ErrorKind::Shape, what, ": needs a tensor with one element, got ", ir::short_str(shape()),
         detail::at_loc(loc));
}

std::string Tensor::str(Loc loc) const {
  if (!impl_) return "tensor(<undefined>)";
  if (impl_->trace != 0) return "tensor(<traced>, " + ir::short_str(impl_->shape) + ")";
  return detail::format_buffer(buffer(loc));
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

Tensor Tensor::operator[](AxisIndex i) const { return index({TensorIndex(i.i)}, i.loc); }

// ---- Files

Tensor load_npy(const std::string& path, Loc loc) {
  return Tensor(detail::make_computed(io::load_npy(path), loc));
}

void save_npy(const std::string& path, const Tensor& t, Loc loc) {
  io::save_npy(path, t.buffer(loc));
}

} // namespace rlx
