// src/ir/attr_value.cpp -- generic attribute <-> AttrValue conversion and hashing, written once
// for every attribute struct through its Boost.Hana reflection.
#include "attr_value.hpp"

#include "ir/attr_reflect.hpp"
#include "rlx/ir/text.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace rlx::ir::detail {

namespace hana = boost::hana;
using K = AttrValue::Kind;

std::string_view kind_name(K k) {
  switch (k) {
  case K::None:
    return "none";
  case K::Bool:
    return "a boolean";
  case K::Int:
    return "an integer";
  case K::Float:
    return "a number";
  case K::String:
    return "a string";
  case K::Ident:
    return "an identifier";
  case K::Bytes:
    return "bytes";
  case K::List:
    return "a list";
  case K::Graph:
    return "a graph";
  }
  return "?";
}

namespace {

template <class T> struct IsVector : std::false_type {};
template <class T> struct IsVector<std::vector<T>> : std::true_type {};
template <class T> struct IsArray : std::false_type {};
template <class T, std::size_t N> struct IsArray<std::array<T, N>> : std::true_type {};
template <class T> struct IsOptional : std::false_type {};
template <class T> struct IsOptional<std::optional<T>> : std::true_type {};

// ---- to value

template <class T> AttrValue to_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return AttrValue::boolean(v);
  } else if constexpr (std::is_integral_v<T>) {
    return AttrValue::integer(static_cast<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return AttrValue::real(static_cast<double>(v), std::is_same_v<T, float>);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return AttrValue::string(v);
  } else if constexpr (std::is_same_v<T, DType>) {
    return AttrValue::ident(std::string(dtype_name(v)));
  } else if constexpr (NamedEnum<T>) {
    return AttrValue::ident(std::string(enum_name(v)));
  } else if constexpr (std::is_same_v<T, Bytes>) {
    AttrValue a;
    a.kind = K::Bytes;
    a.bytes = v.data;
    return a;
  } else if constexpr (std::is_same_v<T, SubGraph>) {
    return AttrValue::subgraph(v);
  } else if constexpr (std::is_same_v<T, QuantScheme>) { // `Q4_0`, or `[Int8Block, 32]`
    AttrValue name = AttrValue::ident(std::string(enum_name(v.format)));
    if (!v.has_block_size()) return name;
    AttrValue a;
    a.kind = K::List;
    a.list = {name, AttrValue::integer(v.block_size)};
    return a;
  } else if constexpr (IsOptional<T>::value) {
    return v ? to_value(*v) : AttrValue::none();
  } else if constexpr (IsVector<T>::value || IsArray<T>::value) {
    AttrValue a;
    a.kind = K::List;
    for (const auto& e : v) a.list.push_back(to_value(e));
    return a;
  } else {
    static_assert(sizeof(T) == 0, "attribute field type without a value conversion");
  }
}

// ---- from value

[[noreturn]] void type_error(const std::string& path, std::string_view want, const AttrValue& got) {
  throw AttrError{path, std::string("expected ") + std::string(want) + ", got " +
                            std::string(kind_name(got.kind))};
}

std::optional<double> special_float(const AttrValue& v) {
  if (v.kind != K::Ident && v.kind != K::String) return std::nullopt;
  if (v.s == "inf") return std::numeric_limits<double>::infinity();
  if (v.s == "-inf") return -std::numeric_limits<double>::infinity();
  if (v.s == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <class T> void from_value(const AttrValue& v, T& out, const std::string& path) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.kind != K::Bool) type_error(path, "true or false", v);
    out = v.b;
  } else if constexpr (std::is_integral_v<T>) {
    if (v.kind != K::Int) type_error(path, "an integer", v);
    if (v.i < int64_t(std::numeric_limits<T>::min()) ||
        (v.i > 0 && uint64_t(v.i) > uint64_t(std::numeric_limits<T>::max())))
      throw AttrError{path, "integer " + std::to_string(v.i) + " is out of range"};
    out = static_cast<T>(v.i);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.kind == K::Int) {
      out = static_cast<T>(v.i);
    } else if (v.kind == K::Float) {
      // Values at or past FLT_MAX + half an ulp (2^103) would round to infinity.
      constexpr double kFloatLimit = double(std::numeric_limits<float>::max()) + 0x1p103;
      if (std::is_same_v<T, float> && std::isfinite(v.f) && std::fabs(v.f) >= kFloatLimit)
        throw AttrError{path, "number is out of range for f32"};
      out = static_cast<T>(v.f);
    } else if (auto s = special_float(v)) {
      out = static_cast<T>(*s);
    } else {
      type_error(path, "a number", v);
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (v.kind != K::String) type_error(path, "a string", v);
    out = v.s;
  } else if constexpr (std::is_same_v<T, DType>) {
    if (v.kind != K::Ident && v.kind != K::String) type_error(path, "a dtype", v);
    auto t = parse_dtype(v.s);
    if (!t) throw AttrError{path, "unknown dtype '" + v.s + "'"};
    out = *t;
  } else if constexpr (NamedEnum<T>) {
    if (v.kind != K::Ident && v.kind != K::String) type_error(path, "a name", v);
    auto e = parse_enum<T>(v.s);
    if (!e) {
      std::string choices;
      for (auto n : rlx_enum_names(T{})) choices += (choices.empty() ? "" : ", ") + std::string(n);
      throw AttrError{path, "unknown value '" + v.s + "' (expected one of " + choices + ")"};
    }
    out = *e;
  } else if constexpr (std::is_same_v<T, Bytes>) {
    if (v.kind == K::Bytes) {
      out.data = v.bytes;
    } else if (v.kind == K::String) {
      if (v.s.size() % 2) throw AttrError{path, "hex bytes need an even number of digits"};
      out.data.clear();
      for (std::size_t i = 0; i < v.s.size(); i += 2) {
        int hi = hex_digit(v.s[i]), lo = hex_digit(v.s[i + 1]);
        if (hi < 0 || lo < 0) throw AttrError{path, "bytes must be hex digits"};
        out.data.push_back(uint8_t(hi * 16 + lo));
      }
    } else {
      type_error(path, "bytes", v);
    }
  } else if constexpr (std::is_same_v<T, SubGraph>) {
    if (v.kind != K::Graph) type_error(path, "a graph", v);
    out = v.graph;
  } else if constexpr (std::is_same_v<T, QuantScheme>) {
    const bool listed = v.kind == K::List && v.list.size() == 2;
    const AttrValue& name = listed ? v.list[0] : v;
    QuantFormat f{};
    from_value(name, f, path);
    QuantScheme q{f, 0};
    if (q.has_block_size() != listed)
      throw AttrError{path, q.has_block_size()
                                ? "needs [" + std::string(enum_name(f)) + ", block_size]"
                                : "takes no block size"};
    if (listed) {
      from_value(v.list[1], q.block_size, path + "[1]");
      if (q.block_size <= 0) throw AttrError{path + "[1]", "block size must be positive"};
    }
    out = q;
  } else if constexpr (IsOptional<T>::value) {
    if (v.kind == K::None) {
      out.reset();
    } else {
      typename T::value_type inner{};
      from_value(v, inner, path);
      out = std::move(inner);
    }
  } else if constexpr (IsVector<T>::value) {
    if (v.kind != K::List) type_error(path, "a list", v);
    out.clear();
    for (std::size_t i = 0; i < v.list.size(); ++i) {
      typename T::value_type e{};
      from_value(v.list[i], e, path + "[" + std::to_string(i) + "]");
      out.push_back(std::move(e));
    }
  } else if constexpr (IsArray<T>::value) {
    if (v.kind != K::List) type_error(path, "a list", v);
    if (v.list.size() != out.size())
      throw AttrError{path, "expected a list of " + std::to_string(out.size()) + " values, got " +
                                std::to_string(v.list.size())};
    for (std::size_t i = 0; i < out.size(); ++i)
      from_value(v.list[i], out[i], path + "[" + std::to_string(i) + "]");
  } else {
    static_assert(sizeof(T) == 0, "attribute field type without a value conversion");
  }
}

template <class S> std::vector<AttrField> struct_to_fields(const S& s, bool omit_defaults) {
  std::vector<AttrField> out;
  const S defaults{};
  hana::for_each(hana::accessors<S>(), [&](auto pair) {
    auto get = hana::second(pair);
    if (omit_defaults && get(s) == get(defaults)) return;
    out.emplace_back(std::string_view(hana::to<const char*>(hana::first(pair))), to_value(get(s)));
  });
  return out;
}

template <class S>
S struct_from_fields(const std::vector<std::pair<std::string, AttrValue>>& fields) {
  S s{};
  std::vector<bool> seen(fields.size(), false);
  std::vector<std::string_view> names_seen;
  hana::for_each(hana::accessors<S>(), [&](auto pair) {
    std::string_view key = hana::to<const char*>(hana::first(pair));
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].first != key) continue;
      if (seen[i] || std::find(names_seen.begin(), names_seen.end(), key) != names_seen.end())
        throw AttrError{std::string(key), "attribute given twice"};
      seen[i] = true;
      names_seen.push_back(key);
      from_value(fields[i].second, hana::second(pair)(s), std::string(key));
    }
  });
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (seen[i]) continue;
    std::string known;
    hana::for_each(hana::accessors<S>(), [&](auto pair) {
      known += (known.empty() ? "" : ", ") + std::string(hana::to<const char*>(hana::first(pair)));
    });
    throw AttrError{fields[i].first,
                    "unknown attribute" + (known.empty() ? std::string(" (this op has none)")
                                                         : " (expected one of " + known + ")")};
  }
  return s;
}

std::size_t hash_value_tree(const AttrValue& v, std::size_t h) {
  auto mix = [&](std::size_t x) { h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(std::size_t(v.kind));
  switch (v.kind) {
  case K::None:
    break;
  case K::Bool:
    mix(v.b);
    break;
  case K::Int:
    mix(std::hash<int64_t>{}(v.i));
    break;
  case K::Float:
    mix(std::hash<double>{}(v.f));
    break;
  case K::String:
  case K::Ident:
    mix(std::hash<std::string>{}(v.s));
    break;
  case K::Bytes:
    mix(std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size())));
    break;
  case K::List:
    for (const auto& e : v.list) h = hash_value_tree(e, h);
    mix(v.list.size());
    break;
  case K::Graph: // the text IR is exact: equal bodies print alike, different ones differently
    mix(std::hash<std::string>{}(to_text(v.graph.get())));
    break;
  }
  return h;
}

} // namespace

std::vector<AttrField> attrs_to_fields(const Op& op, bool omit_defaults) {
  return std::visit(
      [&](const auto& s) -> std::vector<AttrField> {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, std::monostate>) {
          return {};
        } else {
          return struct_to_fields(s, omit_defaults);
        }
      },
      op.any_attrs());
}

Op attrs_from_fields(OpKind kind, const std::vector<std::pair<std::string, AttrValue>>& fields) {
  Op op(kind);
  std::visit(
      [&](auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (!std::is_same_v<S, std::monostate>) s = struct_from_fields<S>(fields);
      },
      op.any_attrs());
  return op;
}

std::size_t hash_op(const Op& op) {
  std::size_t h = std::hash<int>{}(int(op.kind()));
  for (const auto& [name, value] : attrs_to_fields(op, false))
    h = hash_value_tree(value, h ^ std::hash<std::string_view>{}(name));
  return h;
}

} // namespace rlx::ir::detail
