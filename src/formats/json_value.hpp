// src/formats/json_value.hpp -- a small strict JSON (RFC 8259) value tree, writer and parser.
// Internal: the graph serializer (json_graph.cpp) builds and reads these trees.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlx::ir::detail {

/// One JSON value. Integers (literals without '.', 'e' or 'E') and other numbers are kept apart
/// so that an integer round-trips exactly; objects keep their key order.
struct JsonValue {
  enum class Kind : uint8_t { Null, Bool, Int, Float, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  Kind kind = Kind::Null;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  bool f32 = false; ///< Float only: written as the shortest float (not double) representation
  std::string s;
  std::vector<JsonValue> array;
  std::vector<Member> object;

  static JsonValue null() { return {}; }
  static JsonValue boolean(bool v);
  static JsonValue integer(int64_t v);
  static JsonValue number(double v, bool is_f32 = false);
  static JsonValue string(std::string v);
  static JsonValue make_array(std::vector<JsonValue> items = {});
  static JsonValue make_object(std::vector<Member> members = {});

  /// The member with this key, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;
};

/// "null", "a boolean", "an integer", "a number", "a string", "an array", "an object".
std::string_view json_kind_name(JsonValue::Kind k);

/// Deepest nesting of arrays and objects the parser accepts.
inline constexpr int kJsonMaxDepth = 128;

/// Serialize. Compact output has no whitespace; pretty output indents by two spaces and keeps
/// an array or object on one line when it fits in 100 columns. Floats must be finite.
std::string write_json(const JsonValue& v, bool pretty);

/// Append `s` as a quoted JSON string (escaping '"', '\\' and control characters).
void write_json_string(std::string& out, std::string_view s);

/// Parse one JSON document (surrounding whitespace allowed). Throws rlx::Error
/// (ErrorKind::Parse) "json:<line>:<col>: <message>" for any syntax error, invalid UTF-8,
/// nesting deeper than kJsonMaxDepth, duplicate keys, or a number out of range.
JsonValue parse_json(std::string_view text);

} // namespace rlx::ir::detail
