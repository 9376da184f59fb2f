// src/ir/attr_value.hpp -- a format-neutral value tree for attributes, and the generic
// (Boost.Hana) conversion of every attribute struct to and from it. Text IR and JSON print and
// parse this tree; neither has per-op code.
#pragma once

#include "rlx/ir/op.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlx::ir::detail {

struct AttrValue {
  enum class Kind : uint8_t { None, Bool, Int, Float, String, Ident, Bytes, List, Graph };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  bool f32 = false; ///< a float field: print the shortest float (not double) representation
  std::string s;    ///< String and Ident
  std::vector<uint8_t> bytes;
  std::vector<AttrValue> list;
  SubGraph graph; ///< Graph (custom_fn's bodies)

  static AttrValue none() { return {}; }
  static AttrValue boolean(bool v) {
    AttrValue a;
    a.kind = Kind::Bool;
    a.b = v;
    return a;
  }
  static AttrValue integer(int64_t v) {
    AttrValue a;
    a.kind = Kind::Int;
    a.i = v;
    return a;
  }
  static AttrValue real(double v, bool is_f32) {
    AttrValue a;
    a.kind = Kind::Float;
    a.f = v;
    a.f32 = is_f32;
    return a;
  }
  static AttrValue string(std::string v) {
    AttrValue a;
    a.kind = Kind::String;
    a.s = std::move(v);
    return a;
  }
  static AttrValue subgraph(SubGraph g) {
    AttrValue a;
    a.kind = Kind::Graph;
    a.graph = std::move(g);
    return a;
  }
  static AttrValue ident(std::string v) {
    AttrValue a;
    a.kind = Kind::Ident;
    a.s = std::move(v);
    return a;
  }
};

std::string_view kind_name(AttrValue::Kind k);

/// A named field.
using AttrField = std::pair<std::string_view, AttrValue>;

/// The fields of op's attributes, in declaration order. With omit_defaults, fields equal to the
/// default of the attribute struct are left out (the text printer's compact form).
std::vector<AttrField> attrs_to_fields(const Op& op, bool omit_defaults);

/// Thrown by attrs_from_fields; `path` is like "axes[1]".
struct AttrError {
  std::string path;
  std::string message;
};

/// Build an Op of `kind` from named fields; missing fields keep their defaults. Throws AttrError
/// for an unknown field name, a duplicate, or a value of the wrong type or range.
Op attrs_from_fields(OpKind kind, const std::vector<std::pair<std::string, AttrValue>>& fields);

/// Hash of an op (kind + attributes), stable within a process.
std::size_t hash_op(const Op& op);

} // namespace rlx::ir::detail
