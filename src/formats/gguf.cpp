// src/formats/gguf.cpp -- the GGUF reader (include/rlx/gguf.hpp). The layout, per GGUF's
// specification (ggml's docs/gguf.md), all little-endian: u32 magic "GGUF", u32 version, u64
// tensor count, u64 metadata count; the key/values (a string key: u64 length + bytes, a u32 type,
// the value; an array is a u32 element type, a u64 count and the elements); the tensor infos
// (name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset); padding to general.alignment;
// the data section, each tensor at its offset from the section's start.
//
// Every read is bounds-checked against the bytes; a count is checked against what the remaining
// bytes could hold before anything is reserved for it, so a corrupt count cannot make the reader
// allocate more than the file's size (times a small constant).
#include "rlx/gguf.hpp"

#include "quant/packed_formats.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rlx::gguf {

namespace {

using rlx::detail::at_loc;

constexpr int kMaxDims = 4;       // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8; // nested arrays (GGUF's writers nest at most once)

/// What a ggml type stores: values and bytes per block, the dtype of a plain type or the scheme
/// of a packed one. Unknown ids have values 0.
struct TypeInfo {
  int64_t values = 0, bytes = 0;
  std::optional<DType> dtype;
  std::optional<ir::QuantFormat> format;
};

TypeInfo type_info(uint32_t t) {
  using F = ir::QuantFormat;
  switch (t) {
  case 0:
    return {1, 4, DType::F32, {}};
  case 1:
    return {1, 2, DType::F16, {}};
  case 2:
    return {32, 18, {}, F::Q4_0};
  case 3:
    return {32, 20, {}, F::Q4_1};
  case 6:
    return {32, 22, {}, F::Q5_0};
  case 7:
    return {32, 24, {}, F::Q5_1};
  case 8:
    return {32, 34, {}, F::Q8_0};
  case 9: // Q8_1: sizes known (bounds checked), no decoder
    return {32, 36, {}, {}};
  case 10:
    return {256, 84, {}, F::Q2_K};
  case 11:
    return {256, 110, {}, F::Q3_K};
  case 12:
    return {256, 144, {}, F::Q4_K};
  case 13:
    return {256, 176, {}, F::Q5_K};
  case 14:
    return {256, 210, {}, F::Q6_K};
  case 15:
    return {256, 292, {}, F::Q8_K};
  case 24:
    return {1, 1, DType::I8, {}};
  case 25:
    return {1, 2, DType::I16, {}};
  case 26:
    return {1, 4, DType::I32, {}};
  case 27:
    return {1, 8, DType::I64, {}};
  case 28:
    return {1, 8, DType::F64, {}};
  case 30:
    return {1, 2, DType::BF16, {}};
  default:
    return {};
  }
}

class Reader {
public:
  Reader(std::span<const std::byte> b, std::string name, const Loc& loc)
      : b_(b), name_(std::move(name)), loc_(loc) {}

  template <class... Args> [[noreturn]] void bad(const Args&... args) const {
    fail(ErrorKind::Io, "rlx::gguf: ", name_, ": ", args..., " (at byte ", pos_, ")", at_loc(loc_));
  }
  uint64_t left() const { return b_.size() - pos_; }
  std::size_t pos() const { return pos_; }
  void need(uint64_t n, const char* what) const {
    if (n > left()) bad("truncated: ", what, " needs ", n, " bytes, ", left(), " left");
  }
  template <class T> T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    const uint64_t n = get<uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), std::size_t(n));
    pos_ += std::size_t(n);
    return s;
  }
  /// A count of items of at least `min_bytes` each that the rest of the file must hold.
  uint64_t count(uint64_t n, uint64_t min_bytes, const char* what) const {
    if (min_bytes && n > left() / min_bytes)
      bad(what, " count ", n, " is more than the ", left(), " bytes left can hold");
    return n;
  }

  Value value(ValueType t, int depth) {
    Value v;
    v.type = t;
    switch (t) {
    case ValueType::U8:
      v.u = get<uint8_t>("a u8");
      break;
    case ValueType::I8:
      v.i = get<int8_t>("an i8");
      break;
    case ValueType::U16:
      v.u = get<uint16_t>("a u16");
      break;
    case ValueType::I16:
      v.i = get<int16_t>("an i16");
      break;
    case ValueType::U32:
      v.u = get<uint32_t>("a u32");
      break;
    case ValueType::I32:
      v.i = get<int32_t>("an i32");
      break;
    case ValueType::U64:
      v.u = get<uint64_t>("a u64");
      break;
    case ValueType::I64:
      v.i = get<int64_t>("an i64");
      break;
    case ValueType::F32:
      v.f = get<float>("an f32");
      break;
    case ValueType::F64:
      v.f = get<double>("an f64");
      break;
    case ValueType::Bool: {
      const uint8_t c = get<uint8_t>("a bool");
      if (c > 1) bad("a bool must be 0 or 1, got ", int(c));
      v.b = c == 1;
      break;
    }
    case ValueType::String:
      v.s = str("a string");
      break;
    case ValueType::Array: {
      if (depth >= kMaxArrayDepth) bad("arrays nested more than ", kMaxArrayDepth, " deep");
      v.array_type = value_type(get<uint32_t>("an array's type"));
      const uint64_t n = count(get<uint64_t>("an array's count"), min_size(v.array_type), "array");
      auto items = std::make_shared<std::vector<Value>>();
      items->reserve(std::size_t(n));
      for (uint64_t k = 0; k < n; ++k) items->push_back(value(v.array_type, depth + 1));
      v.elements = std::move(items);
      break;
    }
    }
    return v;
  }
  ValueType value_type(uint32_t t) const {
    if (t > uint32_t(ValueType::F64)) bad("unknown metadata value type ", t);
    return ValueType(t);
  }
  static uint64_t min_size(ValueType t) {
    switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::Bool:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::String:
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
      return 8;
    case ValueType::Array:
      return 12;
    }
    return 1;
  }

private:
  std::span<const std::byte> b_;
  std::size_t pos_ = 0;
  std::string name_;
  Loc loc_;
};

struct Mapping {
  void* addr = nullptr;
  std::size_t size = 0;
  ~Mapping() {
    if (addr) munmap(addr, size);
  }
};

} // namespace

File parse(std::span<const std::byte> bytes, std::shared_ptr<const void> owner, std::string name,
           Loc loc) {
  Reader r(bytes, name, loc);
  File f;
  f.mapping = std::move(owner);
  f.file_bytes = bytes;
  f.path = name;
  if (r.get<uint32_t>("the magic") != 0x46554747u) r.bad("not a GGUF file (bad magic)");
  f.version = r.get<uint32_t>("the version");
  if (f.version != 2 && f.version != 3) r.bad("unsupported GGUF version ", f.version);
  const uint64_t n_tensors = r.get<uint64_t>("the tensor count");
  const uint64_t n_kv = r.get<uint64_t>("the metadata count");
  // A key/value takes at least 8 (key length) + 4 (type) + 1 bytes, a tensor info 8 + 4 + 4 + 8.
  r.count(n_kv, 13, "metadata");
  r.count(n_tensors, 24, "tensor");
  f.metadata.reserve(std::size_t(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.str("a metadata key");
    const ValueType t = r.value_type(r.get<uint32_t>("a metadata type"));
    Value v = r.value(t, 0);
    if (key == "general.alignment") {
      if (t != ValueType::U32 || v.u == 0 || (v.u & (v.u - 1)))
        r.bad("general.alignment must be a u32 power of two, got ", v.u);
      f.alignment = v.u;
    }
    f.metadata.emplace_back(std::move(key), std::move(v));
  }
  r.count(n_tensors, 24, "tensor");
  f.tensors.reserve(std::size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = r.str("a tensor name");
    const uint32_t nd = r.get<uint32_t>("a tensor's dims count");
    if (nd == 0 || nd > kMaxDims) r.bad("tensor '", t.name, "' has ", nd, " dims (1 to 4)");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      const uint64_t e = r.get<uint64_t>("a tensor dim");
      if (e == 0 || e > (uint64_t(1) << 40) || numel > (uint64_t(1) << 62) / e)
        r.bad("tensor '", t.name, "' has an invalid dim ", e);
      numel *= e;
      t.dims.push_back(int64_t(e));
    }
    t.type = r.get<uint32_t>("a tensor type");
    t.offset = r.get<uint64_t>("a tensor offset");
    const TypeInfo ti = type_info(t.type);
    if (ti.values > 0) {
      if (uint64_t(t.dims[0]) % uint64_t(ti.values))
        r.bad("tensor '", t.name, "': ne0 = ", t.dims[0], " is not a multiple of its type's ",
              ti.values, "-value block");
      t.bytes = numel / uint64_t(ti.values) * uint64_t(ti.bytes);
    }
    if (ti.format) t.scheme = ir::QuantScheme::of(*ti.format);
    if (t.offset % f.alignment) r.bad("tensor '", t.name, "' offset ", t.offset, " is misaligned");
    f.tensors.push_back(std::move(t));
  }
  const uint64_t pos = r.pos();
  f.data_offset = (pos + f.alignment - 1) / f.alignment * f.alignment;
  if (f.data_offset > bytes.size() && !f.tensors.empty())
    r.bad("truncated before the data section");
  const uint64_t data_size = bytes.size() > f.data_offset ? bytes.size() - f.data_offset : 0;
  for (const TensorInfo& t : f.tensors)
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      r.bad("tensor '", t.name, "' (", t.bytes, " bytes at offset ", t.offset,
            ") lies past the data section's ", data_size, " bytes");
  return f;
}

File load(const std::string& path, Loc loc) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(ErrorKind::Io, "rlx::gguf::load: cannot open '", path, "': ", std::strerror(errno),
         at_loc(loc));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::Io, "rlx::gguf::load: '", path, "' is not a regular file", at_loc(loc));
  }
  auto m = std::make_shared<Mapping>();
  m->size = std::size_t(st.st_size);
  if (m->size > 0) {
    void* p = ::mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fail(ErrorKind::Io, "rlx::gguf::load: cannot map '", path, "': ", std::strerror(err),
           at_loc(loc));
    }
    m->addr = p;
  }
  ::close(fd);
  std::span<const std::byte> bytes(static_cast<const std::byte*>(m->addr), m->size);
  return parse(bytes, std::shared_ptr<const void>(m, m->addr), path, loc);
}

std::span<const Value> Value::array() const {
  return elements ? std::span<const Value>(*elements) : std::span<const Value>();
}

const Value* File::find(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

const TensorInfo& File::info(std::string_view name, Loc loc) const {
  for (const TensorInfo& t : tensors)
    if (t.name == name) return t;
  fail(ErrorKind::Value, "rlx::gguf: ", path, " has no tensor '", name, "'", at_loc(loc));
}

std::span<const std::byte> File::bytes(const TensorInfo& t) const {
  return file_bytes.subspan(std::size_t(data_offset + t.offset), std::size_t(t.bytes));
}

Tensor File::tensor(std::string_view name, Loc loc) const {
  const TensorInfo& t = info(name, loc);
  const TypeInfo ti = type_info(t.type);
  if (!ti.dtype && !t.scheme)
    fail(ErrorKind::Value, "rlx::gguf: tensor '", t.name, "' of ", path, " has ggml type ", t.type,
         ", which rlx does not decode", at_loc(loc));
  Dims sizes;
  if (ti.dtype) {
    sizes.assign(t.dims.rbegin(), t.dims.rend());
  } else {
    int64_t rows = 1;
    for (std::size_t d = 1; d < t.dims.size(); ++d) rows *= t.dims[d];
    sizes = {rows, t.dims[0] / ti.values * ti.bytes};
  }
  auto data = const_cast<std::byte*>(bytes(t).data());
  return Tensor::from_blob(
      static_cast<void*>(data), sizes, ti.dtype.value_or(DType::U8), [keep = mapping](void*) {},
      loc);
}

} // namespace rlx::gguf
