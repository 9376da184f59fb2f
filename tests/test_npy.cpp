// tests/test_npy.cpp -- .npy I/O: round trips, files written by NumPy, malformed input.
#include "support/check_error.hpp"

#include <rlx/io/npy.hpp>

#include <complex>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

using namespace rlx;
using namespace rlx::ir;
using namespace std::string_literals;
using namespace std::string_view_literals;
using rlx::Buffer;
using rlx::test::check_error;

namespace {

// Bytes written by NumPy 1.24 (np.lib.format.write_array), embedded verbatim.
//
// /usr/bin/python3 -c "import io,numpy as np; f=io.BytesIO();
//   np.lib.format.write_array(f, np.arange(6, dtype='<f4').reshape(2, 3) * 0.5 - 1);
//   print(f.getvalue())"
constexpr std::string_view kNumpyF32 =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }        "
    "                                                  \x0a\x00\x00\x80\xbf\x00\x00\x00\xbf\x00"
    "\x00\x00\x00\x00\x00\x00?\x00\x00\x80?\x00\x00\xc0?"sv;
// /usr/bin/python3 -c "import io,numpy as np; f=io.BytesIO();
//   np.lib.format.write_array(f, np.array([[True, False, True]]), version=(2, 0));
//   print(f.getvalue())"
constexpr std::string_view kNumpyBoolV2 =
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '|b1', 'fortran_order': False, 'shape': (1, 3), }  "
    "                                                      \x0a\x01\x00\x01"sv;
// /usr/bin/python3 -c "import io,numpy as np; f=io.BytesIO();
//   np.lib.format.write_array(f, np.array([-2**40, 7, -1], dtype='<i8'), version=(3, 0));
//   print(f.getvalue())"
constexpr std::string_view kNumpyI64V3 =
    "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }    "
    "                                                      \x0a\x00\x00\x00\x00\x00\xff\xff\xff"
    "\x07\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"sv;

/// A version-1.0 file with this header text (no padding) followed by `data`.
std::string npy(std::string_view header, std::string_view data = {}, int major = 1) {
  std::string out = "\x93NUMPY"s;
  out.push_back(char(major));
  out.push_back('\0');
  std::size_t n = header.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out.push_back(char((n >> (8 * i)) & 0xff));
  out += header;
  out += data;
  return out;
}

std::string f32_header(std::string_view shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': "s + std::string(shape) + ", }\n";
}

Buffer sample(DType t, std::vector<int64_t> dims) {
  Buffer b(Shape::of(dims, t));
  for (int64_t i = 0; i < b.numel(); ++i) {
    // Values that survive every dtype: small signed integers and halves for floats.
    double v = is_float(t) ? (double(i) - 3.0) * 0.5 : double(i % 7) - (is_signed(t) ? 3 : 0);
    if (is_bool(t)) v = double(i % 3 == 0);
    if (is_complex(t))
      b.set_c64(i, {float(i) - 1.5f, 0.25f * float(i)});
    else
      b.set_f64(i, v);
  }
  return b;
}

constexpr DType kSupported[] = {DType::F32, DType::F64,  DType::F16, DType::I8,
                                DType::I16, DType::I32,  DType::I64, DType::U8,
                                DType::U32, DType::Bool, DType::C64};

} // namespace

TEST_CASE("npy: every supported dtype round-trips through write_npy and read_npy") {
  for (DType t : kSupported) {
    for (auto dims :
         {std::vector<int64_t>{2, 3}, std::vector<int64_t>{5}, std::vector<int64_t>{1, 2, 1, 3}}) {
      INFO("dtype " << dtype_name(t) << ", rank " << dims.size());
      Buffer b = sample(t, dims);
      std::string bytes = io::write_npy(b);
      // Data starts at a multiple of 64, after a header ending in '\n' (as NumPy writes it).
      std::size_t data_at = bytes.size() - b.bytes().size();
      CHECK(data_at % 64 == 0);
      CHECK(bytes[data_at - 1] == '\n');
      CHECK(io::read_npy(bytes) == b);
    }
  }
}

TEST_CASE("npy: scalars and zero-size arrays round-trip") {
  for (DType t : kSupported) {
    INFO("dtype " << dtype_name(t));
    Buffer scalar = sample(t, {});
    CHECK(scalar.numel() == 1);
    std::string bytes = io::write_npy(scalar);
    CHECK(bytes.find("'shape': ()") != std::string::npos);
    CHECK(io::read_npy(bytes) == scalar);
    for (auto dims : {std::vector<int64_t>{0}, std::vector<int64_t>{2, 0, 3}}) {
      Buffer empty(Shape::of(dims, t));
      Buffer back = io::read_npy(io::write_npy(empty));
      CHECK(back.shape() == empty.shape());
      CHECK(back.numel() == 0);
    }
  }
}

TEST_CASE("npy: extreme values keep their exact bits") {
  std::vector<double> f{std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity(),
                        -0.0,
                        1e-300,
                        1.0 / 3.0,
                        std::numeric_limits<double>::quiet_NaN()};
  Buffer f64 = Buffer::from_f64(Shape({6}, DType::F64), f);
  CHECK(io::read_npy(io::write_npy(f64)).bytes().size() == 48);
  CHECK(io::read_npy(io::write_npy(f64)) == f64); // byte-wise equality, so NaN == NaN here
  std::vector<int64_t> i{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  Buffer i64 = Buffer::i64({2}, i);
  CHECK(io::read_npy(io::write_npy(i64)).to_i64() == i);
}

TEST_CASE("npy: write_npy produces the same bytes as NumPy for a 1.0 file") {
  std::vector<float> v{-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f};
  CHECK(io::write_npy(Buffer::f32({2, 3}, v)) == kNumpyF32);
}

TEST_CASE("npy: files written by NumPy read back with their values (versions 1.0, 2.0, 3.0)") {
  Buffer f = io::read_npy(kNumpyF32, "f32.npy");
  CHECK(f.shape() == Shape({2, 3}, DType::F32));
  // np.arange(6) * 0.5 - 1
  CHECK(f.to_f64() == std::vector<double>{-1.0, -0.5, 0.0, 0.5, 1.0, 1.5});

  Buffer b = io::read_npy(kNumpyBoolV2);
  CHECK(b.shape() == Shape({1, 3}, DType::Bool));
  CHECK(b.to_i64() == std::vector<int64_t>{1, 0, 1});

  Buffer i = io::read_npy(kNumpyI64V3);
  CHECK(i.shape() == Shape({3}, DType::I64));
  CHECK(i.to_i64() == std::vector<int64_t>{-(int64_t(1) << 40), 7, -1});
}

TEST_CASE("npy: byte-order spellings |, < and = are accepted; 1-byte types ignore the order") {
  struct Case {
    std::string_view descr;
    DType dtype;
  };
  for (Case c : {Case{"|i1", DType::I8}, Case{"<i1", DType::I8}, Case{">i1", DType::I8},
                 Case{"|u1", DType::U8}, Case{"<u1", DType::U8}, Case{"|b1", DType::Bool},
                 Case{"<b1", DType::Bool}, Case{"=f4", DType::F32}, Case{"=i8", DType::I64},
                 Case{"<c8", DType::C64}, Case{"=u4", DType::U32}, Case{"<f2", DType::F16}}) {
    INFO("descr " << c.descr);
    std::string header =
        "{'descr': '"s + std::string(c.descr) + "', 'fortran_order': False, 'shape': (2,), }";
    std::string data(2 * size_bytes(c.dtype), '\0');
    Buffer b = io::read_npy(npy(header, data));
    CHECK(b.shape() == Shape({2}, c.dtype));
  }
}

TEST_CASE("npy: headers in another key order, with double quotes and no trailing comma parse") {
  std::string data(8, '\0');
  Buffer b = io::read_npy(npy(R"J({"shape": (1, 2), "fortran_order": False, "descr": "<f4"})J"
                              "\n",
                              data));
  CHECK(b.shape() == Shape({1, 2}, DType::F32));
  // A 1-tuple with spaces, and the Python 2 long suffix older NumPy versions wrote.
  Buffer c = io::read_npy(npy("{'descr':'<i2','fortran_order':False,'shape':( 3L , )}", "abcdef"));
  CHECK(c.shape() == Shape({3}, DType::I16));
  CHECK(c.get_i64(0) == 'a' + 256 * 'b');
}

TEST_CASE("npy: bool bytes other than 0 read as true") {
  Buffer b = io::read_npy(
      npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", "\x00\x02\xff"sv));
  CHECK(b.to_i64() == std::vector<int64_t>{0, 1, 1});
  CHECK(b == Buffer::from_i64(Shape({3}, DType::Bool), std::vector<int64_t>{0, 1, 1}));
}

TEST_CASE("npy: fortran_order True is unsupported for rank >= 2 and harmless for rank <= 1") {
  std::string data(24, '\0');
  check_error(
      [&] {
        io::read_npy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data),
                     "f.npy");
      },
      ErrorKind::Unsupported, "f.npy: npy: fortran_order True is not supported");
  Buffer v =
      io::read_npy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (6,), }", data), "v");
  CHECK(v.shape() == Shape({6}, DType::F32));
}

TEST_CASE("npy: bf16 has no NumPy dtype and is refused when writing") {
  Buffer b(Shape({2}, DType::BF16));
  check_error([&] { io::write_npy(b); }, ErrorKind::Unsupported, "bf16 has no NumPy dtype");
}

TEST_CASE("npy: malformed files throw Parse errors naming the source and the problem") {
  std::string f32x6(24, '\0');
  struct Case {
    std::string name;
    std::string bytes;
    std::string needle;
  };
  std::vector<Case> cases{
      {"empty input", "", "bad magic"},
      {"wrong magic", "\x93NUMPX\x01\x00\x00\x00"s, "bad magic"},
      {"text file", "hello world, not numpy", "bad magic"},
      {"magic only", "\x93NUMPY"s, "truncated before the format version"},
      {"version 4.0", npy(f32_header("(6,)"), f32x6, 4), "unsupported format version 4.0"},
      {"version 1.1", "\x93NUMPY\x01\x01\x10\x00"s, "unsupported format version 1.1"},
      {"version 0.0", "\x93NUMPY\x00\x00\x10\x00"s, "unsupported format version 0.0"},
      {"half a header length", "\x93NUMPY\x01\x00\x10"s, "truncated before the header length"},
      {"v2 header length cut", "\x93NUMPY\x02\x00\x10\x00"s, "truncated before the header length"},
      {"header longer than the file", "\x93NUMPY\x01\x00\x50\x00{'descr'"s,
       "truncated header: it declares 80 bytes, the file holds 8"},
      {"huge v2 header length", "\x93NUMPY\x02\x00\xff\xff\xff\xff{}"s, "truncated header"},
      {"header is a list", npy("[1, 2, 3]\n"), "not a Python dict literal"},
      {"header is empty", npy(""), "not a Python dict literal"},
      {"dict not closed", npy("{'descr': '<f4', 'fortran_order': False"), "expected ',' or '}'"},
      {"dict cut after a comma", npy("{'descr': '<f4', "), "header dict is not closed"},
      {"unquoted key", npy("{descr: '<f4'}"), "keys must be strings"},
      {"missing colon", npy("{'descr' '<f4'}"), "expected ':' after key 'descr'"},
      {"unterminated string", npy("{'descr': '<f4}"), "unterminated string"},
      {"text after the dict", npy(f32_header("(6,)") + "x", f32x6),
       "unexpected text after the header dict"},
      {"missing shape", npy("{'descr': '<f4', 'fortran_order': False}"), "missing key 'shape'"},
      {"missing descr", npy("{'fortran_order': False, 'shape': (6,)}", f32x6),
       "missing key 'descr'"},
      {"missing fortran_order", npy("{'descr': '<f4', 'shape': (6,)}", f32x6),
       "missing key 'fortran_order'"},
      {"extra key", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 'y'}"),
       "unexpected key 'x'"},
      {"repeated key", npy("{'descr': '<f4', 'descr': '<f4'}"), "repeats the key 'descr'"},
      {"descr is a number", npy("{'descr': 5, 'fortran_order': False, 'shape': (6,)}"),
       "the value of 'descr' is not a string, True/False or a tuple"},
      {"descr is a tuple", npy("{'descr': (4,), 'fortran_order': False, 'shape': (6,)}"),
       "'descr' must be a dtype string"},
      {"structured descr", npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}"),
       "structured dtypes are not supported"},
      {"fortran_order a string", npy("{'descr': '<f4', 'fortran_order': 'no', 'shape': (6,)}"),
       "'fortran_order' must be True or False"},
      {"shape a string", npy("{'descr': '<f4', 'fortran_order': False, 'shape': '6'}"),
       "'shape' must be a tuple of integers"},
      {"shape without the 1-tuple comma", npy(f32_header("(6)"), f32x6),
       "'shape' is (6), an integer, not a tuple"},
      {"shape not closed", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,"),
       "the tuple of 'shape' is not closed"},
      {"shape cut", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6"),
       "expected ',' or ')'"},
      {"shape of floats", npy(f32_header("(2.5,)")), "expected ',' or ')' in the tuple of 'shape'"},
      {"shape of names", npy(f32_header("(n,)")), "must hold integers only"},
      {"negative dim", npy(f32_header("(-1,)")), "'shape' has a negative dimension"},
      {"huge dim", npy(f32_header("(281474976710657,)")), "dimension larger than 2^48"},
      {"enormous dim", npy(f32_header("(99999999999999999999999999,)")),
       "dimension larger than 2^48"},
      {"too many elements", npy(f32_header("(281474976710656, 281474976710656)")),
       "too many elements"},
      {"unknown dtype", npy("{'descr': '<f16', 'fortran_order': False, 'shape': (1,)}"),
       "unknown dtype '<f16'"},
      {"unicode dtype", npy("{'descr': '<U3', 'fortran_order': False, 'shape': (1,)}"),
       "unknown dtype '<U3'"},
      {"object dtype", npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,)}"),
       "unknown dtype '|O'"},
      {"bad byte order", npy("{'descr': '!f4', 'fortran_order': False, 'shape': (1,)}"),
       "unknown dtype '!f4'"},
      {"big-endian f4", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (6,)}", f32x6),
       "big-endian data is not supported, dtype '>f4'"},
      {"big-endian i8", npy("{'descr': '>i8', 'fortran_order': False, 'shape': (3,)}", f32x6),
       "big-endian data is not supported"},
      {"data too short", npy(f32_header("(2, 3)"), std::string(23, '\0')),
       "data is truncated: shape needs 24 bytes of f32, got 23"},
      {"no data", npy(f32_header("(2, 3)")), "data is truncated"},
      {"2^62 f8 elements (2^65 bytes)",
       npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2147483648, 2147483648), }"),
       "data is truncated: shape needs more than 2^63 bytes of f64, got 0"},
      {"shape with a Python expression",
       npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 2**61)}"), "expected ',' or ')'"},
      {"2^61 c8 elements (2^64 bytes)",
       npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2305843009213693952,)}"),
       "dimension larger than 2^48"},
      {"2^60 i2 elements",
       npy("{'descr': '<i2', 'fortran_order': False, 'shape': (1073741824, "
           "1073741824)}",
           "ab"),
       "data is truncated: shape needs 2305843009213693952 bytes of i16, got 2"},
      {"data too long", npy(f32_header("(2, 3)"), std::string(25, '\0')),
       "data is longer than the shape needs: 24 bytes expected, got 25"},
      {"data after an empty array", npy(f32_header("(0, 3)"), "x"), "data is longer"},
  };
  CHECK(cases.size() >= 20);
  for (const Case& c : cases) {
    INFO("case: " << c.name);
    std::string msg =
        check_error([&] { io::read_npy(c.bytes, "bad.npy"); }, ErrorKind::Parse, c.needle);
    CHECK(msg.rfind("bad.npy: npy", 0) == 0); // the source comes first
  }
}

TEST_CASE("npy: a header with more than 64 dims is refused") {
  std::string shape = "(";
  for (int i = 0; i < 65; ++i) shape += "1, ";
  shape += ")";
  check_error([&] { io::read_npy(npy(f32_header(shape), "abcd")); }, ErrorKind::Parse,
              "'shape' has more than 64 entries");
}

TEST_CASE("npy: every truncation and every single-byte corruption of a file fails cleanly") {
  std::string good(kNumpyF32);
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    check_error([&] { io::read_npy(good.substr(0, n)); }, ErrorKind::Parse, "<npy>: npy");
  }
  // Corrupting one byte either still reads (a changed value or padding) or throws rlx::Error.
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (char c : {'\0', '(', ')', '\'', ',', '}', '{', '-', '9', '\xff'}) {
      std::string bad = good;
      bad[at] = c;
      try {
        Buffer b = io::read_npy(bad);
        CHECK(b.numel() >= 0);
      } catch (const Error& e) {
        INFO("byte " << at << " set to " << int(c) << ": " << e.what());
        CHECK((e.kind() == ErrorKind::Parse || e.kind() == ErrorKind::Unsupported));
      }
    }
  }
}

TEST_CASE("npy: save_npy and load_npy go through a file; missing files are Io errors") {
  auto dir = std::filesystem::temp_directory_path();
  std::string path = (dir / "rlx_test_npy_roundtrip.npy").string();
  Buffer b = sample(DType::I32, {3, 2});
  io::save_npy(path, b);
  CHECK(io::load_npy(path) == b);
  std::remove(path.c_str());

  std::string missing = (dir / "rlx_no_such_dir" / "x.npy").string();
  check_error([&] { io::load_npy(missing); }, ErrorKind::Io, "cannot open '" + missing + "'");
  check_error([&] { io::save_npy(missing, b); }, ErrorKind::Io, "cannot open '" + missing + "'");
  check_error([&] { io::load_npy(dir.string()); }, ErrorKind::Io, "it is a directory");
  check_error([&] { io::save_npy(dir.string(), b); }, ErrorKind::Io, "cannot open");

  // A file that exists but is not .npy names its path in the Parse error.
  std::string text = (dir / "rlx_test_npy_text.npy").string();
  {
    std::FILE* f = std::fopen(text.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fputs("not numpy", f);
    std::fclose(f);
  }
  check_error([&] { io::load_npy(text); }, ErrorKind::Parse, text + ": npy: bad magic");
  std::remove(text.c_str());
}
