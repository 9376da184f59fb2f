// tests/test_limits.cpp -- impossible sizes are rlx::Errors naming the op (never a wrapped count,
// a crash or garbage), the memory limit, and bounded file reads: issue 20's reported cases, each
// through the Graph builder, the Tensor frontend or the text IR, on both backends where they run.
#include "support/check_error.hpp"

#include <rlx/all.hpp>
#include <rlx/io/file.hpp>
#include <rlx/io/npy.hpp>
#include <rlx/memory.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
namespace ir = rlx::ir;
using rlx::Buffer;
using rlx::ErrorKind;
using rlx::test::check_error;

namespace {

constexpr int64_t k2p31 = int64_t(1) << 31;
constexpr std::size_t kGiB = std::size_t(1) << 30;

/// Sets the memory limit for one test, then restores it.
struct MemoryLimitScope {
  std::size_t saved = rlx::memory_limit();
  explicit MemoryLimitScope(std::size_t bytes) { rlx::set_memory_limit(bytes); }
  ~MemoryLimitScope() { rlx::set_memory_limit(saved); }
};

/// Parses, verifies and runs a text graph on a backend with zero-filled inputs.
std::vector<Buffer> run_text(const std::string& text, rlx::Backend backend) {
  ir::Graph g = ir::parse_text(text, "limits.rlx");
  ir::verify(g);
  std::vector<Buffer> leaves;
  for (const ir::Node& n : g.nodes())
    if (n.op.kind() == ir::OpKind::Input || n.op.kind() == ir::OpKind::Param)
      leaves.emplace_back(n.shape);
  std::vector<const Buffer*> ptrs;
  for (const Buffer& b : leaves) ptrs.push_back(&b);
  return rlx::run_executable(rlx::compile(g, backend), ptrs);
}

const rlx::Backend kBackends[] = {rlx::Backend::Interp, rlx::Backend::Jit};

} // namespace

TEST_CASE("a static shape over 2^48 bytes is a Limit error, also when its element count wraps") {
  // 2^31 * 2^31 f32 elements are 2^64 bytes: the byte count used to wrap to 0.
  std::string msg = check_error([] { ir::Shape({k2p31, k2p31}, ir::DType::F32); }, ErrorKind::Limit,
                                "shape f32[2147483648,2147483648] is too large");
  CHECK(msg.find("2^48 bytes") != std::string::npos);
  check_error([] { ir::Shape({int64_t(1) << 46, 8}, ir::DType::F64); }, ErrorKind::Limit,
              "too large");
  // The limit itself fits, in bytes, and so do dynamic dims next to static ones.
  CHECK(ir::Shape({int64_t(1) << 46, 4}, ir::DType::I8).size_bytes() == int64_t(1) << 48);
  ir::Shape dynamic({ir::Dim::dynamic("n"), k2p31}, ir::DType::F32);
  CHECK(!dynamic.num_elements());
  // Binding the dynamic dim makes the size static: bound too large, it is an error.
  check_error([&] { (void)dynamic.bind(ir::DimBinding{{ir::symbol_id("n"), k2p31}}); },
              ErrorKind::Limit, "too large");
  // A cast to a wider dtype grows the bytes.
  ir::Shape bytes({int64_t(1) << 47, 2}, ir::DType::I8);
  check_error([&] { (void)bytes.with_dtype(ir::DType::F32); }, ErrorKind::Limit, "too large");
}

TEST_CASE("an empty shape whose other dims could not be strided is a Limit error, as in numpy") {
  check_error([] { ir::Shape({0, int64_t(1) << 40, int64_t(1) << 40}, ir::DType::F32); },
              ErrorKind::Limit, "f32[0,1099511627776,1099511627776] is too large");
  check_error([] { (void)Buffer::f32({int64_t(1) << 40, 0, int64_t(1) << 40}, {}); },
              ErrorKind::Limit, "too large");
  check_error([] { (void)rlx::zeros({0, int64_t(1) << 40, int64_t(1) << 40}); }, ErrorKind::Limit,
              "full: shape f32[0,1099511627776,1099511627776] is too large");
}

TEST_CASE("empty tensors with huge dims run on both backends without overflowing a stride") {
  // 0 elements, but the nonzero dims make strides of 2^40 elements and beyond.
  const std::string text = R"(graph @empty_huge {
  %0 = input("x") : [1048576, 0, 1048576] f32
  %1 = transpose(%0, perm=[2, 0, 1]) : [1048576, 1048576, 0] f32
  %2 = exp(%1) : [1048576, 1048576, 0] f32
  %3 = reverse(%2, axes=[0, 1]) : [1048576, 1048576, 0] f32
  %4 = reduce_sum(%3, axes=[1]) : [1048576, 0] f32
  %5 = expand(%0, target_shape=[3, 1048576, 0, 1048576]) : [3, 1048576, 0, 1048576] f32
  return %4, %5
}
)";
  for (rlx::Backend b : kBackends) {
    CAPTURE(b);
    std::vector<Buffer> out = run_text(text, b);
    REQUIRE(out.size() == 2);
    CHECK(out[0].shape() == ir::Shape({1048576, 0}, ir::DType::F32));
    CHECK(out[0].numel() == 0);
    CHECK(out[1].numel() == 0);
  }
}

TEST_CASE("expand to 2^31 x 2^31 is a Limit error naming expand: Graph builder, text IR, Tensor") {
  ir::Graph g("expand");
  ir::NodeId x = g.input("x", ir::Shape({1, 1}, ir::DType::F32));
  std::string msg =
      check_error([&] { g.expand(x, {k2p31, k2p31}); }, ErrorKind::Limit, "expand: shape ");
  CHECK(msg.find("f32[2147483648,2147483648] is too large") != std::string::npos);
  CHECK(msg.find("operands f32[1,1]") != std::string::npos);

  const std::string text = R"(graph @g {
  %0 = input("x") : [1, 1] f32
  %1 = expand(%0, target_shape=[2147483648, 2147483648]) : [2147483648, 2147483648] f32
  return %1
}
)";
  try {
    ir::parse_text(text, "expand.rlx");
    FAIL("parsed");
  } catch (const rlx::Error& e) {
    CHECK(std::string(e.what()).find("too large") != std::string::npos);
  }
  // rlx::ones({2^31, 2^31}) + 1: refused where the shape is made, with the user's line.
  msg = check_error([] { (void)(rlx::ones({k2p31, k2p31}) + 1); }, ErrorKind::Limit,
                    "full: shape f32[2147483648,2147483648] is too large");
  CHECK(msg.find("test_limits.cpp") != std::string::npos);
  check_error([] { (void)rlx::ones({int64_t(1) << 30}).expand({k2p31, int64_t(1) << 30}); },
              ErrorKind::Limit, "expand");
}

TEST_CASE("num_heads * head_dim that wraps is a Shape error for attention and axial_rope2d") {
  // 4611686018427387906 * 4 = 2^64 + 8 wraps to 8, the width of q: the check used to pass, the
  // interpreter then crashed and the JIT returned garbage.
  const int64_t heads = 4611686018427387906;
  ir::Graph g("attn");
  ir::Shape s({1, 2, 8}, ir::DType::F32);
  ir::NodeId q = g.input("q", s), k = g.input("k", s), v = g.input("v", s);
  check_error([&] { g.attention_kind(q, k, v, heads, 4, ir::MaskKind::none(), s); },
              ErrorKind::Shape,
              "attention: num_heads*head_dim = 4611686018427387906*4 exceeds 2^48");
  check_error([&] { g.axial_rope2d(q, 1, 2, 4, heads, 10000.f, 1); }, ErrorKind::Shape,
              "axial_rope2d: num_heads*head_dim = 4611686018427387906*4 exceeds 2^48");
  for (const char* op : {"attention(%0, %0, %0, num_heads=4611686018427387906, head_dim=4)",
                         "axial_rope2d(%0, end_x=1, end_y=2, head_dim=4, "
                         "num_heads=4611686018427387906)"}) {
    std::string text = std::string("graph @g {\n  %0 = input(\"q\") : [1, 2, 8] f32\n  %1 = ") +
                       op + " : [1, 2, 8] f32\n  return %1\n}\n";
    for (rlx::Backend b : kBackends) {
      CAPTURE(op);
      CAPTURE(b);
      check_error([&] { run_text(text, b); }, ErrorKind::Verify, "exceeds 2^48");
    }
  }
}

TEST_CASE("axial_rope2d's grid and head_dim are checked when the graph is built") {
  // Found by fuzz_run: the graph verified, then both backends refused it at run time.
  ir::Graph g("axial");
  ir::NodeId x = g.input("x", ir::Shape({1, 6, 8}, ir::DType::F32));
  check_error([&] { g.axial_rope2d(x, 4, 2, 8, 1, 100.f, 1); }, ErrorKind::Shape,
              "axial_rope2d: sequence length 6 is not a multiple of end_x*end_y (4*2)");
  check_error([&] { g.axial_rope2d(x, 3, 0, 8, 1, 100.f, 1); }, ErrorKind::Shape,
              "end_x and end_y must be >= 1");
  ir::NodeId y = g.input("y", ir::Shape({1, 6, 6}, ir::DType::F32));
  check_error([&] { g.axial_rope2d(y, 3, 2, 6, 1, 100.f, 1); }, ErrorKind::Shape,
              "head_dim 6 must be a multiple of 4");
  // A grid whose product would not fit in int64 is fine on an empty sequence.
  ir::NodeId e = g.input("e", ir::Shape({1, 0, 8}, ir::DType::F32));
  g.axial_rope2d(e, int64_t(1) << 62, int64_t(1) << 62, 8, 1, 100.f, 1);
}

TEST_CASE("products of attributes that leave int64 are Shape errors naming the op") {
  ir::Graph g("attrs");
  // conv2d: weight axis 1 (2^40) * groups (2^24) wraps to 0, the empty input's channels.
  ir::NodeId x = g.input("x", ir::Shape({1, 0, 4, 4}, ir::DType::F32));
  ir::NodeId w = g.input("w", ir::Shape({1, int64_t(1) << 40, 1, 1}, ir::DType::F32));
  check_error([&] { g.conv2d(x, w, {1, 1}, {1, 1}, {0, 0}, {1, 1}, int64_t(1) << 24); },
              ErrorKind::Shape, "conv2d: weight axis 1 (1099511627776) times groups (16777216)");
  // max_pool2d: 2 * padding wrapped negative and passed "padding <= kernel/2".
  ir::NodeId img = g.input("img", ir::Shape({1, 1, 4, 4}, ir::DType::F32));
  check_error([&] { g.max_pool2d(img, {3, 3}, {1, 1}, {int64_t(1) << 62, int64_t(1) << 62}); },
              ErrorKind::Shape,
              "max_pool2d: needs kernel, stride >= 1 and 0 <= padding <= kernel/2");
  // rope: seq * n_rot/2 with a huge head_dim on an empty last axis.
  ir::NodeId r = g.input("r", ir::Shape({1, 1 << 20, 0}, ir::DType::F32));
  ir::NodeId cs = g.input("cs", ir::Shape({1}, ir::DType::F32));
  check_error([&] { g.rope(r, cs, cs, int64_t(1) << 62); }, ErrorKind::Shape,
              "rope: seq * n_rot/2 exceeds 2^48");
  // concat: the concatenated axis may not pass 2^48.
  ir::NodeId big = g.input("big", ir::Shape({int64_t(1) << 47}, ir::DType::I8));
  check_error([&] { g.concat_({big, big, big}, 0); }, ErrorKind::Shape,
              "concat: the concatenated axis exceeds 2^48");
  // pad: sizes past 2^48 name the op.
  check_error([&] { g.pad(big, {int64_t(1) << 47, int64_t(1) << 47}); }, ErrorKind::Value,
              "pad: dimension size");
  // A binding whose rows (batch * seq) wrap.
  check_error([] { (void)ir::DimBinding::batch_seq(int64_t(1) << 40, int64_t(1) << 40); },
              ErrorKind::Bind, "batch 1099511627776 * seq 1099511627776");
}

TEST_CASE("attention on zero-length sequences gives the interpreter's result on the JIT") {
  // No queries (an empty output) and no keys (every query fully masked: zeros).
  const std::string shapes[][2] = {
      {"[2, 0, 8]", "[2, 3, 8]"}, {"[2, 3, 8]", "[2, 0, 8]"}, {"[0, 3, 8]", "[0, 3, 8]"}};
  for (const auto& [qs, ks] : shapes) {
    for (const char* mask : {"", ", mask=Causal"}) {
      std::string text = "graph @g {\n  %0 = input(\"q\") : " + qs + " f32\n" +
                         "  %1 = input(\"k\") : " + ks + " f32\n" +
                         "  %2 = attention(%0, %1, %1, num_heads=2, head_dim=4" + mask +
                         ") : " + qs + " f32\n  return %2\n}\n";
      CAPTURE(text);
      ir::Graph g = ir::parse_text(text);
      Buffer q(g.shape(g.nodes()[0].id)), k(g.shape(g.nodes()[1].id));
      for (int64_t i = 0; i < q.numel(); ++i) q.set_f64(i, 0.25 * double(i % 7) - 0.5);
      std::vector<const Buffer*> leaves{&q, &k};
      Buffer want = rlx::run_executable(rlx::compile(g, rlx::Backend::Interp), leaves)[0];
      Buffer got = rlx::run_executable(rlx::compile(g, rlx::Backend::Jit), leaves)[0];
      CHECK(got == want);
      CHECK(got.shape() == q.shape());
      for (double v : got.to_f64()) CHECK(v == 0.0);
    }
  }
}

TEST_CASE("creation functions refuse lengths past 2^48 or the memory limit before allocating") {
  check_error([] { (void)rlx::arange(0, 1e300, 1); }, ErrorKind::Limit,
              "arange: 1e+300 elements is more than 2^48");
  check_error([] { (void)rlx::arange(-1e308, 1e308, 1e-3); }, ErrorKind::Limit, "arange");
  check_error([] { (void)rlx::linspace(0, 1, int64_t(1) << 62); }, ErrorKind::Limit,
              "linspace: 4.61169e+18 elements is more than 2^48");
  MemoryLimitScope limit(std::size_t(1) << 20);
  check_error([] { (void)rlx::linspace(0, 1, int64_t(1) << 30); }, ErrorKind::Limit,
              "linspace needs 8 GiB, over the memory limit of 1 MiB");
  check_error([] { (void)rlx::eye(1 << 20); }, ErrorKind::Limit, "memory limit");
}

TEST_CASE("storage over the memory limit is a Limit error and counts nothing") {
  rlx::clear_cache();                           // executables keep their arenas
  MemoryLimitScope limit(std::size_t(4) << 20); // 4 MiB
  std::size_t live = rlx::memory_stats().bytes_live;
  std::string msg = check_error([] { rlx::Storage s(std::size_t(8) << 20); }, ErrorKind::Limit,
                                "memory limit: a tensor of 8 MiB does not fit");
  CHECK(msg.find("limit 4 MiB") != std::string::npos);
  CHECK(msg.find("RLX_MAX_MEMORY") != std::string::npos);
  CHECK(msg.find("set_memory_limit(bytes) in C++") != std::string::npos);
  CHECK(rlx::memory_stats().bytes_live == live);
  {
    rlx::Storage a(std::size_t(2) << 20);
    CHECK(rlx::memory_stats().bytes_live >= live + (std::size_t(2) << 20));
    // Together with what is live, 3 MiB more does not fit; 1 MiB of small blocks does.
    check_error([] { rlx::Storage b(std::size_t(3) << 20); }, ErrorKind::Limit, "in use");
    std::vector<rlx::Storage> small;
    for (int i = 0; i < 16; ++i) small.emplace_back(std::size_t(1) << 16);
  }
  CHECK(rlx::memory_stats().bytes_live == live);
  check_error([] { rlx::detail::check_memory_budget(std::size_t(16) * kGiB, "the plan"); },
              ErrorKind::Limit, "the plan needs 16 GiB, over the memory limit of 4 MiB");
  rlx::detail::check_memory_budget(std::size_t(4) << 20, "the plan"); // exactly the limit fits
}

TEST_CASE("a 160-byte graph whose results need 16 GiB fails fast on both backends") {
  const std::string text = R"(graph @big {
  %0 = input("x") : [1] f32
  %1 = expand(%0, target_shape=[4294967296]) : [4294967296] f32
  %2 = exp(%1) : [4294967296] f32
  return %2
}
)";
  CHECK(text.size() < 200);
  MemoryLimitScope limit(8 * kGiB);
  for (rlx::Backend b : kBackends) {
    CAPTURE(b);
    auto start = std::chrono::steady_clock::now();
    std::size_t live = rlx::memory_stats().bytes_live;
    check_error([&] { run_text(text, b); }, ErrorKind::Limit, "16 GiB");
    CHECK(rlx::memory_stats().bytes_live == live);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  }
}

TEST_CASE("a plan whose intermediates need 16 GiB is refused at planning on both backends") {
  // The exp's 16 GiB result feeds a matmul: it is an intermediate, placed in the arena.
  const std::string text = R"(graph @wide {
  %0 = input("x") : [1, 1] f32
  %1 = input("y") : [65536, 1] f32
  %2 = expand(%0, target_shape=[65536, 65536]) : [65536, 65536] f32
  %3 = exp(%2) : [65536, 65536] f32
  %4 = matmul(%3, %1) : [65536, 1] f32
  return %4
}
)";
  MemoryLimitScope limit(8 * kGiB);
  ir::Graph g = ir::parse_text(text, "limits.rlx");
  ir::verify(g);
  for (rlx::Backend b : kBackends) {
    CAPTURE(b);
    std::size_t live = rlx::memory_stats().bytes_live;
    // The JIT's plan views the expand (16 GiB), the interpreter's materializes it (32 GiB).
    std::string msg = check_error([&] { (void)rlx::plan_for(g, b); }, ErrorKind::Limit,
                                  "graph @wide's arena (its intermediates) needs ");
    CHECK(msg.find("GiB, over the memory limit of 8 GiB") != std::string::npos);
    CHECK(msg.find("RLX_MAX_MEMORY") != std::string::npos);
    check_error([&] { run_text(text, b); }, ErrorKind::Limit, "RLX_MAX_MEMORY");
    CHECK(rlx::memory_stats().bytes_live == live);
  }
}

TEST_CASE("the memory limit defaults to the physical memory, and sizes read as RLX_MAX_MEMORY") {
  if (std::getenv("RLX_MAX_MEMORY") == nullptr) {
    std::size_t phys =
        std::size_t(::sysconf(_SC_PHYS_PAGES)) * std::size_t(::sysconf(_SC_PAGESIZE));
    CHECK(rlx::memory_limit() == phys);
  }
  using rlx::detail::parse_byte_size;
  CHECK(parse_byte_size("4096") == 4096u);
  CHECK(parse_byte_size("8G") == 8 * kGiB);
  CHECK(parse_byte_size("8g") == 8 * kGiB);
  CHECK(parse_byte_size("8GiB") == 8 * kGiB);
  CHECK(parse_byte_size("512M") == std::size_t(512) << 20);
  CHECK(parse_byte_size("64K") == std::size_t(64) << 10);
  CHECK(parse_byte_size("1.5T") == std::size_t(3) << 39);
  for (const char* bad : {"", "G", "8Q", "8 G", "-1", "1e9", "8GG", "99999999999T"}) {
    CAPTURE(bad);
    CHECK(!parse_byte_size(bad));
  }
}

namespace {

/// A fresh directory, removed with its contents at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("rlx-limits-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

} // namespace

TEST_CASE("read_file refuses devices, FIFOs and directories at once, and files over its cap") {
  TempDir dir;
  auto start = std::chrono::steady_clock::now();
  check_error([] { rlx::io::read_file("/dev/zero", "graph"); }, ErrorKind::Io,
              "graph: cannot read '/dev/zero': it is a device");
  fs::path fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0); // no writer: opening it blocking would wait forever
  check_error([&] { rlx::io::read_file(fifo.string()); }, ErrorKind::Io, "it is a FIFO");
  check_error([&] { rlx::io::read_file(dir.path.string()); }, ErrorKind::Io, "it is a directory");
  check_error([&] { rlx::io::read_file((dir.path / "missing").string()); }, ErrorKind::Io,
              "cannot open");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));

  fs::path file = dir.path / "f.txt";
  std::ofstream(file) << std::string(100, 'x');
  CHECK(rlx::io::read_file(file.string()) == std::string(100, 'x'));
  CHECK(rlx::io::read_file(file.string(), "", 100).size() == 100);
  check_error([&] { rlx::io::read_file(file.string(), "npy", 99); }, ErrorKind::Io,
              "npy: cannot read '" + file.string() + "': it has 100 bytes, more than the 99");
  // A link to a regular file is read; a link to a device is not.
  fs::create_symlink(file, dir.path / "link");
  CHECK(rlx::io::read_file((dir.path / "link").string()).size() == 100);
  fs::create_symlink("/dev/zero", dir.path / "zero");
  check_error([&] { rlx::io::read_file((dir.path / "zero").string()); }, ErrorKind::Io,
              "it is a device");
  // The npy reader goes through it.
  check_error([] { rlx::io::load_npy("/dev/zero"); }, ErrorKind::Io, "it is a device");
}

TEST_CASE("an empty .npy array with impossibly large other dims is a parse error naming the file") {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1099511627776, "
                       "1099511627776), }";
  header.resize(117, ' ');
  header += '\n'; // the 10-byte prefix and 118 header bytes end on a 64-byte boundary
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) +
                      char(header.size() >> 8) + header;
  check_error([&] { rlx::io::read_npy(bytes, "x.npy"); }, ErrorKind::Parse,
              "x.npy: npy: shape f32[0,1099511627776,1099511627776] is too large");
}

TEST_CASE("read_stream stops at its cap") {
  std::istringstream in(std::string(1000, 'y'));
  CHECK(rlx::io::read_stream(in, "the stream").size() == 1000);
  std::istringstream more(std::string(1000, 'y'));
  check_error([&] { rlx::io::read_stream(more, "standard input", "graph", 999); }, ErrorKind::Io,
              "graph: cannot read standard input: more than the 999 bytes");
}
