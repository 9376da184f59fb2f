// src/io/npy.cpp -- NumPy .npy reader and writer: magic, version, Python-dict header, raw data.
#include "rlx/io/npy.hpp"

#include "rlx/error.hpp"
#include "rlx/io/file.hpp"

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace rlx::io {

using ir::DType;

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kMaxRank = 64;
constexpr int64_t kMaxElements = int64_t(1) << 62;

struct DTypeSpelling {
  std::string_view code; ///< kind and size without the byte-order character, e.g. "f4"
  DType dtype;
};
constexpr DTypeSpelling kDTypes[] = {
    {"f4", DType::F32}, {"f8", DType::F64},  {"f2", DType::F16}, {"i1", DType::I8},
    {"i2", DType::I16}, {"i4", DType::I32},  {"i8", DType::I64}, {"u1", DType::U8},
    {"u4", DType::U32}, {"b1", DType::Bool}, {"c8", DType::C64},
};

/// A parsed header value: a string, a boolean or a tuple of integers.
struct Value {
  enum class Type { Str, Bool, Tuple } type = Type::Str;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> ints;
};

/// Recursive-descent parser of the header, a Python dict literal such as
/// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
  HeaderParser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  std::vector<std::pair<std::string, Value>> parse_dict() {
    std::vector<std::pair<std::string, Value>> items;
    skip_ws();
    if (!eat('{')) error("header is not a Python dict literal (expected '{')");
    skip_ws();
    while (!eat('}')) {
      if (at_end()) error("header dict is not closed (expected '}')");
      if (peek() != '\'' && peek() != '"') error("header dict keys must be strings");
      std::string key = parse_string();
      skip_ws();
      if (!eat(':')) error("expected ':' after key '", key, "' in the header dict");
      skip_ws();
      for (const auto& item : items)
        if (item.first == key) error("header dict repeats the key '", key, "'");
      items.emplace_back(key, parse_value(key));
      skip_ws();
      if (eat(',')) {
        skip_ws();
        continue;
      }
      if (!eat('}')) error("expected ',' or '}' after the value of '", key, "' in the header dict");
      break;
    }
    skip_ws();
    if (!at_end()) error("unexpected text after the header dict");
    return items;
  }

  template <class... Args> [[noreturn]] void error(const Args&... args) const {
    fail(ErrorKind::Parse, source_, ": npy header: ", args...);
  }

private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool eat(char c) {
    if (peek() != c || at_end()) return false;
    ++pos_;
    return true;
  }
  bool eat_word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      ++pos_;
  }

  std::string parse_string() {
    char quote = text_[pos_++];
    std::string out;
    while (true) {
      if (at_end()) error("unterminated string");
      char c = text_[pos_++];
      if (c == quote) return out;
      if (c == '\\') {
        if (at_end()) error("unterminated string");
        c = text_[pos_++];
      }
      out.push_back(c);
    }
  }

  Value parse_value(const std::string& key) {
    Value v;
    if (peek() == '\'' || peek() == '"') {
      v.type = Value::Type::Str;
      v.str = parse_string();
    } else if (eat_word("True")) {
      v.type = Value::Type::Bool;
      v.boolean = true;
    } else if (eat_word("False")) {
      v.type = Value::Type::Bool;
      v.boolean = false;
    } else if (eat('(')) {
      v.type = Value::Type::Tuple;
      parse_tuple_body(key, v.ints);
    } else if (peek() == '[') {
      error("the value of '", key, "' is a list (structured dtypes are not supported)");
    } else {
      error("the value of '", key, "' is not a string, True/False or a tuple");
    }
    return v;
  }

  /// After '(': integers separated by commas, then ')'. A 1-tuple needs its trailing comma.
  void parse_tuple_body(const std::string& key, std::vector<int64_t>& out) {
    bool comma_after_last = false;
    skip_ws();
    while (!eat(')')) {
      if (at_end()) error("the tuple of '", key, "' is not closed (expected ')')");
      if (out.size() >= kMaxRank) error("'", key, "' has more than ", kMaxRank, " entries");
      out.push_back(parse_int(key));
      skip_ws();
      comma_after_last = eat(',');
      skip_ws();
      if (!comma_after_last && peek() != ')')
        error("expected ',' or ')' in the tuple of '", key, "'");
    }
    if (out.size() == 1 && !comma_after_last)
      error("'", key, "' is (", out[0], "), an integer, not a tuple (write (", out[0], ",))");
  }

  int64_t parse_int(const std::string& key) {
    bool negative = eat('-');
    if (peek() < '0' || peek() > '9') error("the tuple of '", key, "' must hold integers only");
    int64_t v = 0;
    bool overflow = false;
    while (peek() >= '0' && peek() <= '9') {
      int digit = text_[pos_++] - '0';
      if (v > (kMaxElements - digit) / 10)
        overflow = true;
      else
        v = v * 10 + digit;
    }
    eat('L'); // Python 2 long suffix, as older numpy wrote it
    if (negative && (v != 0 || overflow)) error("'", key, "' has a negative dimension");
    if (overflow || v > ir::kMaxDimSize) error("'", key, "' has a dimension larger than 2^48");
    return v;
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
};

DType parse_descr(const std::string& descr, std::string_view source) {
  auto bad = [&](std::string_view why) -> DType {
    fail(ErrorKind::Parse, source, ": npy: ", why, " '", descr,
         "' (supported: <f4 <f8 <f2 <i1 <i2 <i4 <i8 |u1 <u4 |b1 <c8)");
  };
  if (descr.size() < 2) return bad("unknown dtype");
  char order = descr[0];
  std::string_view code = std::string_view(descr).substr(1);
  const DTypeSpelling* found = nullptr;
  for (const auto& d : kDTypes)
    if (d.code == code) found = &d;
  if (order != '<' && order != '>' && order != '|' && order != '=') return bad("unknown dtype");
  if (!found) return bad("unknown dtype");
  if (order == '>' && ir::size_bytes(found->dtype) > 1)
    return bad("big-endian data is not supported, dtype");
  return found->dtype;
}

uint32_t read_le(std::string_view bytes, std::size_t at, std::size_t n) {
  uint32_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= uint32_t(uint8_t(bytes[at + i])) << (8 * i);
  return v;
}

std::string_view descr_of(DType t) {
  switch (t) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::I8:
    return "|i1";
  case DType::I16:
    return "<i2";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::U8:
    return "|u1";
  case DType::U32:
    return "<u4";
  case DType::Bool:
    return "|b1";
  case DType::C64:
    return "<c8";
  case DType::BF16:
    break;
  }
  fail(ErrorKind::Unsupported, "npy: ", ir::dtype_name(t),
       " has no NumPy dtype; cast the buffer to f32 before saving it");
}

} // namespace

Buffer read_npy(std::string_view bytes, std::string_view source) {
  auto error = [&](const auto&... args) { fail(ErrorKind::Parse, source, ": npy: ", args...); };
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic)
    error("bad magic (not a .npy file: it must start with \\x93NUMPY)");
  if (bytes.size() < 8) error("truncated before the format version");
  int major = uint8_t(bytes[6]), minor = uint8_t(bytes[7]);
  if (minor != 0 || major < 1 || major > 3)
    error("unsupported format version ", major, ".", minor, " (supported: 1.0, 2.0, 3.0)");
  std::size_t len_size = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_size) error("truncated before the header length");
  std::size_t header_len = read_le(bytes, 8, len_size);
  std::size_t data_at = 8 + len_size + header_len;
  if (bytes.size() < data_at)
    error("truncated header: it declares ", header_len, " bytes, the file holds ",
          bytes.size() - 8 - len_size);

  HeaderParser parser(bytes.substr(8 + len_size, header_len), source);
  auto items = parser.parse_dict();
  const Value *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto& [key, value] : items) {
    if (key == "descr")
      descr = &value;
    else if (key == "fortran_order")
      fortran = &value;
    else if (key == "shape")
      shape = &value;
    else
      parser.error("unexpected key '", key, "' (expected descr, fortran_order and shape)");
  }
  if (!descr) parser.error("missing key 'descr'");
  if (!fortran) parser.error("missing key 'fortran_order'");
  if (!shape) parser.error("missing key 'shape'");
  if (descr->type != Value::Type::Str) parser.error("'descr' must be a dtype string such as '<f4'");
  if (fortran->type != Value::Type::Bool) parser.error("'fortran_order' must be True or False");
  if (shape->type != Value::Type::Tuple) parser.error("'shape' must be a tuple of integers");

  DType dtype = parse_descr(descr->str, source);
  if (fortran->boolean && shape->ints.size() > 1)
    fail(ErrorKind::Unsupported, source,
         ": npy: fortran_order True is not supported (only C-order arrays; save with "
         "np.ascontiguousarray)");

  int64_t numel = 1;
  for (int64_t d : shape->ints) {
    if (d != 0 && numel > kMaxElements / d)
      parser.error("shape has too many elements (more than 2^62)");
    numel *= d;
  }
  // numel * element size may exceed 64 bits (2^62 elements of 8 bytes): compare by division.
  std::size_t elem = ir::size_bytes(dtype);
  std::size_t have = bytes.size() - data_at;
  if (uint64_t(numel) > have / elem) {
    if (uint64_t(numel) > uint64_t(INT64_MAX) / elem)
      error("data is truncated: shape needs more than 2^63 bytes of ", ir::dtype_name(dtype),
            ", got ", have);
    error("data is truncated: shape needs ", uint64_t(numel) * elem, " bytes of ",
          ir::dtype_name(dtype), ", got ", have);
  }
  std::size_t want = std::size_t(numel) * elem;
  if (have > want)
    error("data is longer than the shape needs: ", want, " bytes expected, got ", have);

  Buffer out = [&] {
    try {
      return Buffer(ir::Shape::of(shape->ints, dtype));
    } catch (const Error& e) { // an empty shape whose other dims are impossibly large
      error(e.what());
      throw;
    }
  }();
  if (want) std::memcpy(out.bytes().data(), bytes.data() + data_at, want);
  if (dtype == DType::Bool)
    for (std::byte& b : out.bytes()) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
  return out;
}

Buffer load_npy(const std::string& path) { return read_npy(read_file(path, "npy"), path); }

std::string write_npy(const Buffer& buffer) {
  std::string_view descr = descr_of(buffer.dtype());
  std::ostringstream h;
  h << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  const auto& dims = buffer.shape().dims();
  for (std::size_t i = 0; i < dims.size(); ++i) h << (i ? ", " : "") << dims[i].size();
  if (dims.size() == 1) h << ",";
  h << "), }";
  std::string header = h.str();
  // Version 1.0 stores the header length in 2 bytes; longer headers need 2.0 (4 bytes).
  std::size_t prefix = 10;
  int major = 1;
  if (header.size() + 1 + 64 > 0xffff) {
    prefix = 12;
    major = 2;
  }
  std::size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(kMagic);
  out.push_back(char(major));
  out.push_back('\0');
  for (std::size_t i = 0; i < prefix - 8; ++i)
    out.push_back(char((header.size() >> (8 * i)) & 0xff));
  out += header;
  auto data = buffer.bytes();
  out.append(reinterpret_cast<const char*>(data.data()), data.size());
  return out;
}

void save_npy(const std::string& path, const Buffer& buffer) {
  std::string bytes = write_npy(buffer);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    fail(ErrorKind::Io, "npy: cannot open '", path, "' for writing: ", std::strerror(errno));
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out) fail(ErrorKind::Io, "npy: error while writing '", path, "'");
}

} // namespace rlx::io
