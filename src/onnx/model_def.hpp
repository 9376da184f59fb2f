// src/onnx/model_def.hpp -- a protobuf-free copy of the parts of an ONNX model rlx reads.
// src/onnx/proto.cpp fills it (the only file with protobuf headers besides the tensor codec);
// the importer and the op rules read only these structs, so they compile without protobuf.
#pragma once

#include "rlx/interp.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::onnx::detail {

struct GraphDef;

/// One attribute of a node. A graph-valued attribute (a Scan or Loop body) holds its graph;
/// lists of graphs are only flagged (Other).
struct Attr {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Graph, Other };
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::optional<Buffer> t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const GraphDef> g;
};

struct NodeDef {
  std::string op_type, domain, name;
  std::vector<std::string> inputs, outputs; ///< "" marks an omitted optional operand
  std::map<std::string, Attr, std::less<>> attrs;
};

struct DimDef {
  std::optional<int64_t> value;
  std::string param; ///< dim_param, when symbolic
};

/// A graph input or output: its name and, when declared, its tensor type.
struct ValueDef {
  std::string name;
  int elem_type = 0; ///< TensorProto.DataType, 0 when not a tensor type
  std::string kind;  ///< "tensor", "sequence", "optional", "map", "sparse_tensor" or ""
  bool has_shape = false;
  std::vector<DimDef> dims;
};

struct GraphDef {
  std::string name;
  std::vector<NodeDef> nodes;
  std::vector<std::pair<std::string, Buffer>> initializers;
  std::vector<ValueDef> inputs, outputs;
};

struct ModelDef {
  GraphDef graph;
  std::map<std::string, int64_t, std::less<>> opsets; ///< domain -> version ("" is ai.onnx)
  std::string producer;
};

/// Graph-valued attributes nest at most this deep (a body inside a body inside the model's graph
/// is depth 2); deeper is a Parse error.
constexpr int kMaxGraphDepth = 16;

/// Decode a serialized ModelProto; rlx::Error (Parse or Unsupported) naming `source`.
ModelDef decode_model(std::string_view bytes, std::string_view source);

/// The rlx dtype of a TensorProto.DataType; nullopt for types rlx lacks.
std::optional<ir::DType> dtype_of(int elem_type);
/// "source: 'name'", for messages about a named tensor or attribute.
std::string detail_name(std::string_view source, std::string_view name);
/// The ONNX name of a TensorProto.DataType ("FLOAT", "STRING", ...).
std::string_view elem_type_name(int elem_type);

} // namespace rlx::onnx::detail
