// include/rlx/onnx.hpp -- ONNX import: a model file becomes an rlx Graph plus its weights.
#pragma once

#include "rlx/interp.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::onnx {

/// An imported model: the graph (one Input per graph input that is not an initializer, one Param
/// per initializer that a node reads as a tensor, outputs in the model's order) and the values
/// of those params.
struct Model {
  ir::Graph graph;
  interp::Feed params;
  int64_t opset = 0;    ///< the default domain's opset version the model declares
  std::string producer; ///< producer_name (and version) from the file
};

struct LoadOptions {
  /// Values of graph inputs known at load time. ONNX passes some operands as tensors that rlx
  /// needs as attributes (Reshape's shape, Slice's starts, Pad's pads, ...); such an operand
  /// must be an initializer, a Constant node, computable from them, or given here. A graph input
  /// given here and read only in such places becomes no Input of the graph; elsewhere it stays
  /// an Input.
  interp::Feed input_values;
};

/// Parse the bytes of a serialized ModelProto and map its nodes onto rlx builders at the opset
/// versions the model declares. Symbolic input dims (dim_param) become dynamic dims named after
/// them; a missing dim gets a fresh symbol. Errors are rlx::Error naming `source`:
/// ErrorKind::Parse for malformed bytes, ErrorKind::Unsupported for an op, attribute, dtype or
/// opset rlx does not map (naming the op type, the node and the opset), ErrorKind::Shape/Type/
/// Value for a model whose operands do not fit.
Model parse_model(std::string_view bytes, std::string_view source = "<onnx>",
                  const LoadOptions& options = {});

/// Read a .onnx file (ErrorKind::Io when it cannot be read), then as parse_model.
Model load(const std::string& path, const LoadOptions& options = {});

/// A serialized TensorProto (raw_data or the typed fields) as a Buffer; its name in `name` when
/// given. ErrorKind::Parse for malformed bytes or a data length that does not match the dims,
/// ErrorKind::Unsupported for dtypes rlx lacks (strings, complex128, uint16/64, external data).
Buffer read_tensor(std::string_view bytes, std::string_view source = "<tensor>",
                   std::string* name = nullptr);
/// Read a .pb file holding one TensorProto.
Buffer load_tensor(const std::string& path, std::string* name = nullptr);
/// The TensorProto bytes of a buffer (raw_data, little-endian), named `name`.
std::string write_tensor(const Buffer& buffer, std::string_view name = "");

/// What a model holds, read without importing it (for listing and classifying models).
struct NodeSummary {
  std::string op_type, domain, name;
  std::vector<std::string> inputs; ///< "" marks an omitted optional operand
};
struct ModelSummary {
  int64_t opset = 0;
  std::vector<NodeSummary> nodes;
  /// The graph's inputs and outputs by kind: "tensor(FLOAT)", "tensor(STRING)", "sequence", ...
  std::vector<std::string> io_types;
};
/// ErrorKind::Parse for malformed bytes.
ModelSummary summarize(std::string_view bytes, std::string_view source = "<onnx>");

/// The op types the importer maps, sorted (what the conformance runner calls in scope).
std::vector<std::string> supported_ops();

} // namespace rlx::onnx
