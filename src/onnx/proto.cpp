// src/onnx/proto.cpp -- the only file that reads ONNX protobuf messages: ModelProto into the
// protobuf-free ModelDef (the bodies of graph-valued attributes too, nested at most
// kMaxGraphDepth deep), and TensorProto to and from Buffer (raw_data and typed fields).
#include "model_def.hpp"

#include "rlx/error.hpp"
#include "rlx/ir/shape.hpp"
#include "rlx/onnx.hpp"

#include <onnx/onnx_pb.h>

#include <bit>
#include <cstring>
#include <limits>
#include <optional>

namespace rlx::onnx {

using ir::DType;

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian");

namespace detail {

namespace {

constexpr int kMaxRank = 64;

struct ElemType {
  int code;
  std::string_view name;
  std::optional<DType> dtype;
};
constexpr ElemType kElemTypes[] = {
    {0, "UNDEFINED", std::nullopt},   {1, "FLOAT", DType::F32},      {2, "UINT8", DType::U8},
    {3, "INT8", DType::I8},           {4, "UINT16", std::nullopt},   {5, "INT16", DType::I16},
    {6, "INT32", DType::I32},         {7, "INT64", DType::I64},      {8, "STRING", std::nullopt},
    {9, "BOOL", DType::Bool},         {10, "FLOAT16", DType::F16},   {11, "DOUBLE", DType::F64},
    {12, "UINT32", DType::U32},       {13, "UINT64", std::nullopt},  {14, "COMPLEX64", DType::C64},
    {15, "COMPLEX128", std::nullopt}, {16, "BFLOAT16", DType::BF16},
};

/// Copy `n` values of a repeated field into the buffer as its dtype, element by element.
template <class Field, class Conv>
void copy_typed(Buffer& b, const Field& field, std::size_t per_element, Conv conv) {
  std::byte* out = b.bytes().data();
  const std::size_t es = ir::size_bytes(b.dtype()) / per_element;
  for (int k = 0; k < field.size(); ++k) conv(out + std::size_t(k) * es, field.Get(k));
}

template <class T> auto store_as() {
  return [](std::byte* dst, auto v) {
    T t = T(v);
    std::memcpy(dst, &t, sizeof t);
  };
}

Buffer tensor_to_buffer(const ::onnx::TensorProto& t, std::string_view source) {
  std::string what = t.name().empty() ? std::string(source) : detail_name(source, t.name());
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    fail(ErrorKind::Unsupported, what, ": tensor data stored outside the file is not supported");
  if (t.has_segment()) fail(ErrorKind::Unsupported, what, ": segmented tensors are not supported");
  std::optional<DType> dtype = dtype_of(t.data_type());
  if (!dtype)
    fail(ErrorKind::Unsupported, what, ": tensor element type ", elem_type_name(t.data_type()),
         " has no rlx dtype");
  if (t.dims_size() > kMaxRank) fail(ErrorKind::Parse, what, ": rank ", t.dims_size(), " > 64");
  std::vector<int64_t> dims;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > ir::kMaxDimSize) fail(ErrorKind::Parse, what, ": bad dim ", d);
    if (d != 0 && numel > (int64_t(1) << 48) / d)
      fail(ErrorKind::Parse, what, ": too many elements");
    numel *= d;
    dims.push_back(d);
  }
  const std::size_t es = ir::size_bytes(*dtype);
  if (numel > ir::kMaxTensorBytes / int64_t(es))
    fail(ErrorKind::Parse, what, ": ", numel, " elements of ", ir::dtype_name(*dtype),
         " are more than 2^48 bytes");
  auto count_error = [&](std::string_view field, int64_t have) {
    fail(ErrorKind::Parse, what, ": ", field, " holds ", have, " values for ",
         ir::short_str(ir::Shape::of(dims, *dtype)), " (", numel, " elements)");
  };
  if (t.has_raw_data()) {
    if (t.raw_data().size() != std::size_t(numel) * es)
      count_error("raw_data", int64_t(t.raw_data().size() / es));
    Buffer b = Buffer::uninitialized(ir::Shape::of(dims, *dtype));
    if (numel > 0) std::memcpy(b.bytes().data(), t.raw_data().data(), t.raw_data().size());
    if (*dtype == DType::Bool)
      for (std::byte& x : b.bytes()) x = std::byte(x != std::byte{0});
    return b;
  }
  // Typed fields: complex64 holds two floats per element. The count is checked before the buffer
  // is allocated: a few bytes of dims must not allocate terabytes.
  int64_t per = *dtype == DType::C64 ? 2 : 1;
  std::optional<Buffer> b;
  auto check = [&](std::string_view field, int size) -> Buffer& {
    if (int64_t(size) != numel * per) count_error(field, size / per);
    return b.emplace(Buffer::uninitialized(ir::Shape::of(dims, *dtype)));
  };
  // Fields a reader could confuse: values there for another dtype are an error, not ignored.
  switch (*dtype) {
  case DType::F32:
  case DType::C64:
    copy_typed(check("float_data", t.float_data_size()), t.float_data(), std::size_t(per),
               store_as<float>());
    break;
  case DType::F64:
    copy_typed(check("double_data", t.double_data_size()), t.double_data(), 1, store_as<double>());
    break;
  case DType::I64:
    copy_typed(check("int64_data", t.int64_data_size()), t.int64_data(), 1, store_as<int64_t>());
    break;
  case DType::U32:
    copy_typed(check("uint64_data", t.uint64_data_size()), t.uint64_data(), 1,
               store_as<uint32_t>());
    break;
  case DType::I32:
    copy_typed(check("int32_data", t.int32_data_size()), t.int32_data(), 1, store_as<int32_t>());
    break;
  case DType::I16:
    copy_typed(check("int32_data", t.int32_data_size()), t.int32_data(), 1, store_as<int16_t>());
    break;
  case DType::F16:
  case DType::BF16: // the bit patterns, one per int32
    copy_typed(check("int32_data", t.int32_data_size()), t.int32_data(), 1, store_as<uint16_t>());
    break;
  case DType::I8:
    copy_typed(check("int32_data", t.int32_data_size()), t.int32_data(), 1, store_as<int8_t>());
    break;
  case DType::U8:
    copy_typed(check("int32_data", t.int32_data_size()), t.int32_data(), 1, store_as<uint8_t>());
    break;
  case DType::Bool:
    copy_typed(check("int32_data", t.int32_data_size()), t.int32_data(), 1,
               [](std::byte* dst, int32_t v) { *dst = std::byte(v != 0); });
    break;
  }
  return std::move(*b);
}

ValueDef value_def(const ::onnx::ValueInfoProto& v, std::string_view source) {
  ValueDef out;
  out.name = v.name();
  if (!v.has_type()) return out;
  const ::onnx::TypeProto& ty = v.type();
  switch (ty.value_case()) {
  case ::onnx::TypeProto::kTensorType: {
    out.kind = "tensor";
    out.elem_type = ty.tensor_type().elem_type();
    if (!ty.tensor_type().has_shape()) break;
    out.has_shape = true;
    const auto& shape = ty.tensor_type().shape();
    if (shape.dim_size() > kMaxRank)
      fail(ErrorKind::Parse, source, ": value '", v.name(), "' has rank ", shape.dim_size());
    for (const auto& d : shape.dim()) {
      DimDef dd;
      if (d.has_dim_value()) dd.value = d.dim_value();
      if (d.has_dim_param()) dd.param = d.dim_param();
      out.dims.push_back(std::move(dd));
    }
    break;
  }
  case ::onnx::TypeProto::kSequenceType:
    out.kind = "sequence";
    break;
  case ::onnx::TypeProto::kOptionalType:
    out.kind = "optional";
    break;
  case ::onnx::TypeProto::kMapType:
    out.kind = "map";
    break;
  case ::onnx::TypeProto::kSparseTensorType:
    out.kind = "sparse_tensor";
    break;
  default:
    break;
  }
  return out;
}

GraphDef graph_def(const ::onnx::GraphProto& g, std::string_view source, int depth);

/// `source` names the node (for messages); `file` the model, which names a body's own messages.
Attr attr_def(const ::onnx::AttributeProto& a, std::string_view source, std::string_view file,
              int depth) {
  Attr out;
  using AP = ::onnx::AttributeProto;
  switch (a.type()) {
  case AP::FLOAT:
    out.kind = Attr::Kind::Float, out.f = a.f();
    break;
  case AP::INT:
    out.kind = Attr::Kind::Int, out.i = a.i();
    break;
  case AP::STRING:
    out.kind = Attr::Kind::String, out.s = a.s();
    break;
  case AP::TENSOR:
    out.kind = Attr::Kind::Tensor;
    out.t = tensor_to_buffer(a.t(), detail_name(source, a.name()));
    break;
  case AP::FLOATS:
    out.kind = Attr::Kind::Floats;
    out.floats.assign(a.floats().begin(), a.floats().end());
    break;
  case AP::INTS:
    out.kind = Attr::Kind::Ints;
    out.ints.assign(a.ints().begin(), a.ints().end());
    break;
  case AP::STRINGS:
    out.kind = Attr::Kind::Strings;
    out.strings.assign(a.strings().begin(), a.strings().end());
    break;
  case AP::GRAPH: {
    std::string where = detail_name(source, a.name());
    if (!a.has_g()) fail(ErrorKind::Parse, where, ": a GRAPH attribute without a graph");
    if (depth >= kMaxGraphDepth)
      fail(ErrorKind::Unsupported, where, ": graphs nested more than ", kMaxGraphDepth,
           " deep are not supported");
    out.kind = Attr::Kind::Graph;
    out.g = std::make_shared<const GraphDef>(graph_def(a.g(), file, depth + 1));
    break;
  }
  default:
    out.kind = Attr::Kind::Other;
    break;
  }
  return out;
}

GraphDef graph_def(const ::onnx::GraphProto& g, std::string_view source, int depth) {
  GraphDef out;
  out.name = g.name();
  for (const auto& t : g.initializer())
    out.initializers.emplace_back(t.name(), tensor_to_buffer(t, source));
  if (g.sparse_initializer_size() > 0)
    fail(ErrorKind::Unsupported, source, ": sparse initializers are not supported");
  for (const auto& v : g.input()) out.inputs.push_back(value_def(v, source));
  for (const auto& v : g.output()) out.outputs.push_back(value_def(v, source));
  for (const auto& n : g.node()) {
    NodeDef nd;
    nd.op_type = n.op_type();
    nd.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    nd.name = n.name();
    nd.inputs.assign(n.input().begin(), n.input().end());
    nd.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      std::string where = rlx::detail::cat(source, ": node '", n.name(), "' (", n.op_type(), ")");
      nd.attrs.insert_or_assign(a.name(), attr_def(a, where, source, depth));
    }
    out.nodes.push_back(std::move(nd));
  }
  return out;
}

} // namespace

std::string detail_name(std::string_view source, std::string_view name) {
  return rlx::detail::cat(source, ": '", name, "'");
}

std::optional<DType> dtype_of(int elem_type) {
  for (const ElemType& e : kElemTypes)
    if (e.code == elem_type) return e.dtype;
  return std::nullopt;
}

std::string_view elem_type_name(int elem_type) {
  for (const ElemType& e : kElemTypes)
    if (e.code == elem_type) return e.name;
  return "UNKNOWN";
}

ModelDef decode_model(std::string_view bytes, std::string_view source) {
  if (bytes.size() > std::size_t(std::numeric_limits<int>::max()))
    fail(ErrorKind::Unsupported, source, ": models over 2 GiB are not supported");
  ::onnx::ModelProto m;
  if (!m.ParseFromArray(bytes.data(), int(bytes.size())))
    fail(ErrorKind::Parse, source, ": not a valid ONNX model (protobuf parsing failed)");
  if (!m.has_graph()) fail(ErrorKind::Parse, source, ": the model has no graph");
  ModelDef out;
  out.producer = m.producer_name();
  if (!m.producer_version().empty()) out.producer += " " + m.producer_version();
  for (const auto& o : m.opset_import()) {
    std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
    out.opsets[domain] = o.version();
  }
  if (m.opset_import_size() == 0) out.opsets[""] = 1; // IR version 2 models: opset 1
  out.graph = graph_def(m.graph(), source, 0);
  return out;
}

} // namespace detail

Buffer read_tensor(std::string_view bytes, std::string_view source, std::string* name) {
  if (bytes.size() > std::size_t(std::numeric_limits<int>::max()))
    fail(ErrorKind::Unsupported, source, ": tensors over 2 GiB are not supported");
  ::onnx::TensorProto t;
  if (!t.ParseFromArray(bytes.data(), int(bytes.size())))
    fail(ErrorKind::Parse, source, ": not a valid ONNX TensorProto (protobuf parsing failed)");
  if (name) *name = t.name();
  return detail::tensor_to_buffer(t, source);
}

std::string write_tensor(const Buffer& buffer, std::string_view name) {
  ::onnx::TensorProto t;
  t.set_name(std::string(name));
  int code = 0;
  for (const detail::ElemType& e : detail::kElemTypes)
    if (e.dtype == buffer.dtype()) code = e.code;
  RLX_CHECK(code != 0, "write_tensor: no ONNX type for ", ir::dtype_name(buffer.dtype()));
  t.set_data_type(code);
  for (const ir::Dim& d : buffer.shape().dims()) t.add_dims(d.size());
  auto bytes = buffer.bytes();
  t.set_raw_data(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  std::string out;
  t.SerializeToString(&out);
  return out;
}

} // namespace rlx::onnx
