// tests/test_disk_cache.cpp -- the JIT's disk cache (second processes, corrupt entries, racing
// writers) and its inspection hooks (RLX_LOG=compile, RLX_DUMP).
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RLX_CACHE_CHILD
#error "RLX_CACHE_CHILD (the path of tests/cache_child) must be defined by the build"
#endif

namespace fs = std::filesystem;
namespace ir = rlx::ir;
using rlx::Buffer;

namespace {

constexpr std::size_t npos = std::string::npos;

/// A fresh directory, removed with its contents at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> next{0};
    path = fs::temp_directory_path() /
           ("rlx-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(next++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
};

/// Points the process's disk cache at a directory for one test, then restores it.
struct CacheDirScope {
  std::string saved = rlx::disk_cache_dir();
  explicit CacheDirScope(const std::string& dir) {
    rlx::set_disk_cache_dir(dir);
    rlx::clear_cache();
  }
  ~CacheDirScope() {
    rlx::clear_cache();
    rlx::set_disk_cache_dir(saved.empty() ? "off" : saved);
  }
};

struct DebugScope {
  rlx::DebugOptions saved = rlx::debug_options();
  explicit DebugScope(const rlx::DebugOptions& o) { rlx::set_debug_options(o); }
  ~DebugScope() { rlx::set_debug_options(saved); }
};

/// The same program as tests/cache_child.cpp (two fused kernels around a reduction), on a
/// backend.
std::vector<float> compute(rlx::Backend backend = rlx::Backend::Jit) {
  rlx::set_default_backend(backend);
  rlx::Tensor x = rlx::randn({64, 300}, /*seed=*/11);
  rlx::Tensor a = rlx::tanh(x * 0.75f + 0.125f) * rlx::sigmoid(x) + x * x;
  rlx::Tensor s = a.sum(-1);
  rlx::Tensor b = rlx::exp(s * 0.015625f) - 1.0f;
  std::vector<float> out = b.to_vector<float>();
  rlx::set_default_backend(rlx::Backend::Jit);
  return out;
}

bool close_to(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size() || got.empty()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * (1.0f + std::fabs(want[i])))) return false;
  return true;
}

/// Counters since `before`.
rlx::CacheStats since(const rlx::CacheStats& before) {
  rlx::CacheStats now = rlx::cache_stats();
  rlx::CacheStats d;
  d.kernels_compiled = now.kernels_compiled - before.kernels_compiled;
  d.kernel_memory_hits = now.kernel_memory_hits - before.kernel_memory_hits;
  d.disk_hits = now.disk_hits - before.disk_hits;
  d.disk_misses = now.disk_misses - before.disk_misses;
  d.disk_rejected = now.disk_rejected - before.disk_rejected;
  d.disk_write_errors = now.disk_write_errors - before.disk_write_errors;
  return d;
}

/// Every file under dir (entries live in a subdirectory per rlx version), sorted.
std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_entry_name(const fs::path& p) {
  std::string n = p.filename().string();
  if (n.size() != 64 + 2 || n.substr(64) != ".o") return false;
  return std::all_of(n.begin(), n.begin() + 64,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

uint64_t le(const std::string& b, std::size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(b[at + std::size_t(i)])) << (8 * i);
  return v;
}

/// The offset in an entry of a byte inside the object's constants (the first .rodata section)
/// or else its code: a flip there still links, so only the checksum can catch it.
std::size_t data_byte(const std::string& entry) {
  const std::size_t obj = 64; // the entry's header
  REQUIRE(entry.size() > obj + 64);
  REQUIRE(entry.compare(obj, 4, "\177ELF") == 0);
  uint64_t shoff = le(entry, obj + 0x28, 8), shentsize = le(entry, obj + 0x3a, 2),
           shnum = le(entry, obj + 0x3c, 2), shstrndx = le(entry, obj + 0x3e, 2);
  auto section = [&](uint64_t i) { return obj + shoff + i * shentsize; };
  uint64_t strtab = le(entry, section(shstrndx) + 0x18, 8);
  std::size_t text = 0;
  for (uint64_t i = 0; i < shnum; ++i) {
    std::string name(entry.c_str() + obj + strtab + le(entry, section(i), 4));
    uint64_t offset = le(entry, section(i) + 0x18, 8), size = le(entry, section(i) + 0x20, 8);
    if (size == 0) continue;
    if (name.starts_with(".rodata")) return obj + offset + size / 2;
    if (name == ".text" && text == 0) text = obj + offset + size / 2;
  }
  REQUIRE(text != 0);
  return text;
}

/// Run a shell command; its stdout (and stderr, merged) and exit status.
struct Ran {
  int status = -1;
  std::string output;
};
Ran run(const std::string& command) {
  Ran r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// The child's `key=value` line.
std::map<std::string, std::string> parse_counters(const std::string& output) {
  std::map<std::string, std::string> kv;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("kernels_compiled=", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    while (words >> w)
      if (auto eq = w.find('='); eq != std::string::npos) kv[w.substr(0, eq)] = w.substr(eq + 1);
  }
  return kv;
}

int64_t num(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  REQUIRE_MESSAGE(it != kv.end(), "no " << key << " in the child's output");
  return std::stoll(it->second);
}

std::string child(const std::string& env) { return env + " '" RLX_CACHE_CHILD "'"; }

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

/// Collects what the process writes to stderr (fd 2) while it lives.
class CaptureStderr {
public:
  explicit CaptureStderr(const fs::path& file) : file_(file) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::string finish() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      ::dup2(saved_, 2);
      ::close(saved_);
      saved_ = -1;
    }
    return read(file_);
  }
  ~CaptureStderr() { finish(); }

private:
  fs::path file_;
  int saved_ = -1;
};

} // namespace

TEST_CASE("a second process finds the kernels on disk and compiles nothing") {
  TempDir dir;
  std::string env = "RLX_CACHE_DIR='" + dir.str() + "'";
  Ran first = run(child(env));
  REQUIRE_MESSAGE(first.status == 0, first.output);
  auto a = parse_counters(first.output);
  CHECK(num(a, "kernels_compiled") >= 2);
  CHECK(num(a, "disk_misses") == num(a, "kernels_compiled"));
  CHECK(num(a, "disk_hits") == 0);
  CHECK(num(a, "agree") == 1);
  std::vector<fs::path> entries = files_under(dir.path);
  CHECK(int64_t(entries.size()) == num(a, "kernels_compiled"));
  for (const fs::path& p : entries) CHECK_MESSAGE(is_entry_name(p), p);

  Ran second = run(child(env));
  REQUIRE_MESSAGE(second.status == 0, second.output);
  auto b = parse_counters(second.output);
  CHECK(num(b, "kernels_compiled") == 0);
  CHECK(num(b, "disk_hits") == num(a, "kernels_compiled"));
  CHECK(num(b, "disk_misses") == 0);
  CHECK(num(b, "disk_rejected") == 0);
  CHECK(num(b, "agree") == 1);
  CHECK(b.at("checksum") == a.at("checksum"));
  CHECK(files_under(dir.path) == entries);
}

TEST_CASE("a kernel the first process found hot starts with the full tier's code in the next") {
  TempDir dir;
  std::string env = "RLX_CACHE_DIR='" + dir.str() + "'";
  // One large element-wise kernel, compiled by the fast code generator, then by the full one.
  Ran first = run(child(env) + " hot");
  REQUIRE_MESSAGE(first.status == 0, first.output);
  auto a = parse_counters(first.output);
  CHECK(num(a, "recompiled") == 1);
  CHECK(num(a, "kernels_compiled") == 2);
  CHECK(num(a, "disk_misses") == 2);
  CHECK(num(a, "agree") == 1);
  CHECK(files_under(dir.path).size() == 2); // both tiers' objects

  // The next process loads the full tier's object alone, and has nothing left to recompile.
  Ran second = run(child(env) + " hot");
  REQUIRE_MESSAGE(second.status == 0, second.output);
  auto b = parse_counters(second.output);
  CHECK(num(b, "kernels_compiled") == 0);
  CHECK(num(b, "recompiled") == 0);
  CHECK(num(b, "disk_hits") == 1);
  CHECK(num(b, "disk_misses") == 0);
  CHECK(num(b, "disk_rejected") == 0);
  CHECK(num(b, "agree") == 1);
  CHECK(b.at("checksum") == a.at("checksum"));
}

TEST_CASE("kernels are loaded from disk once the in-memory cache is cleared") {
  TempDir dir;
  CacheDirScope scope(dir.str());
  rlx::CacheStats s0 = rlx::cache_stats();
  std::vector<float> first = compute();
  rlx::CacheStats d = since(s0);
  CHECK(d.kernels_compiled >= 2);
  CHECK(d.disk_misses == d.kernels_compiled);
  CHECK(d.disk_hits == 0);
  CHECK(close_to(first, compute(rlx::Backend::Interp)));

  rlx::clear_cache();
  rlx::CacheStats s1 = rlx::cache_stats();
  std::vector<float> again = compute();
  rlx::CacheStats e = since(s1);
  CHECK(e.kernels_compiled == 0);
  CHECK(e.disk_hits == d.kernels_compiled);
  CHECK(e.disk_misses == 0);
  CHECK(e.disk_rejected == 0);
  CHECK(again == first);
}

TEST_CASE("a kernel still loaded is shared with a new executable instead of compiled again") {
  TempDir dir;
  CacheDirScope scope(dir.str());
  ir::Graph g("shared");
  ir::NodeId x = g.input("x", ir::Shape::of(std::vector<int64_t>{1000}, ir::DType::F32));
  ir::NodeId y = g.add_inferred(ir::Op(ir::OpKind::Tanh), {x});
  g.outputs = {g.add_inferred(ir::Op(ir::OpKind::Mul), {y, x})};
  rlx::CacheStats s0 = rlx::cache_stats();
  auto held = rlx::compile(g, rlx::Backend::Jit);
  CHECK(since(s0).kernels_compiled == 1);
  rlx::clear_cache(); // `held` keeps its kernel loaded
  rlx::CacheStats s1 = rlx::cache_stats();
  auto second = rlx::compile(g, rlx::Backend::Jit);
  CHECK(second != held);
  rlx::CacheStats d = since(s1);
  CHECK(d.kernel_memory_hits == 1);
  CHECK(d.kernels_compiled == 0);
  CHECK(d.disk_hits == 0);
  Buffer in(ir::Shape::of(std::vector<int64_t>{1000}, ir::DType::F32));
  for (int64_t i = 0; i < 1000; ++i) in.set_f64(i, double(i) / 100 - 5);
  const Buffer* leaves[] = {&in};
  std::vector<Buffer> a = held->run(leaves), b = second->run(leaves);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  CHECK(a[0].get_f64(999) == doctest::Approx(std::tanh(4.99) * 4.99).epsilon(1e-5));
  for (int64_t i = 0; i < 1000; ++i) REQUIRE(a[0].get_f64(i) == b[0].get_f64(i));
}

TEST_CASE("corrupt, truncated or foreign entries are rejected, recompiled and rewritten") {
  struct Corruption {
    const char* name;
    void (*apply)(std::vector<fs::path>& entries);
  };
  const Corruption corruptions[] = {
      {"truncated to half",
       [](std::vector<fs::path>& es) {
         for (auto& p : es) fs::resize_file(p, fs::file_size(p) / 2);
       }},
      {"truncated inside the header",
       [](std::vector<fs::path>& es) {
         for (auto& p : es) fs::resize_file(p, 20);
       }},
      {"one payload byte flipped",
       [](std::vector<fs::path>& es) {
         for (auto& p : es) {
           std::string b = read(p);
           b[64 + (b.size() - 64) / 2] ^= char(0x5a);
           write(p, b);
         }
       }},
      {"one byte of the machine code's constants flipped",
       [](std::vector<fs::path>& es) {
         for (auto& p : es) {
           std::string b = read(p);
           b[data_byte(b)] ^= char(0x40);
           write(p, b);
         }
       }},
      {"another format version",
       [](std::vector<fs::path>& es) {
         for (auto& p : es) {
           std::string b = read(p);
           b[8] = char(b[8] + 1);
           write(p, b);
         }
       }},
      {"garbage",
       [](std::vector<fs::path>& es) {
         for (auto& p : es) {
           std::string junk(4096, '\0');
           for (std::size_t i = 0; i < junk.size(); ++i) junk[i] = char((i * 7919 + 13) & 0xff);
           write(p, junk);
         }
       }},
      {"empty",
       [](std::vector<fs::path>& es) {
         for (auto& p : es) write(p, "");
       }},
      {"another kernel's entry under this name", [](std::vector<fs::path>& es) {
         std::string first = read(es[0]);
         for (std::size_t i = 0; i + 1 < es.size(); ++i) write(es[i], read(es[i + 1]));
         write(es.back(), first);
       }}};
  for (const Corruption& c : corruptions) {
    SUBCASE(c.name) {
      TempDir dir;
      CacheDirScope scope(dir.str());
      std::vector<float> want = compute();
      std::vector<fs::path> entries = files_under(dir.path);
      REQUIRE(entries.size() >= 2);
      std::vector<std::string> valid;
      for (const fs::path& p : entries) valid.push_back(read(p));
      c.apply(entries);

      rlx::clear_cache();
      rlx::CacheStats s0 = rlx::cache_stats();
      std::vector<float> got = compute();
      rlx::CacheStats d = since(s0);
      CHECK(d.disk_rejected == int64_t(entries.size()));
      CHECK(d.disk_hits == 0);
      CHECK(d.kernels_compiled == int64_t(entries.size()));
      CHECK(got == want);
      // Rewritten: the same bytes as before, and loaded by the next compile.
      REQUIRE(files_under(dir.path) == entries);
      for (std::size_t i = 0; i < entries.size(); ++i) CHECK(read(entries[i]) == valid[i]);
      rlx::clear_cache();
      rlx::CacheStats s1 = rlx::cache_stats();
      CHECK(compute() == want);
      CHECK(since(s1).disk_hits == int64_t(entries.size()));
      CHECK(since(s1).kernels_compiled == 0);
    }
  }
}

TEST_CASE("four processes racing on an empty cache all succeed and leave only valid entries") {
  TempDir dir;
  std::string env = "RLX_CACHE_DIR='" + dir.str() + "'";
  std::string script;
  for (int i = 0; i < 4; ++i)
    script += child(env) + " > '" + dir.str() + "/out" + std::to_string(i) + "' & p" +
              std::to_string(i) + "=$!; ";
  script += "wait $p0 && wait $p1 && wait $p2 && wait $p3";
  fs::path cache = dir.path / "cache";
  Ran r = run("cd '" + dir.str() + "' && " + script);
  CHECK_MESSAGE(r.status == 0, r.output);
  std::string checksum;
  for (int i = 0; i < 4; ++i) {
    fs::path out = dir.path / ("out" + std::to_string(i));
    auto kv = parse_counters(read(out));
    CHECK(num(kv, "agree") == 1);
    if (checksum.empty()) checksum = kv.at("checksum");
    CHECK(kv.at("checksum") == checksum);
    fs::remove(out);
  }
  std::vector<fs::path> entries = files_under(dir.path);
  CHECK(entries.size() >= 2);
  for (const fs::path& p : entries) CHECK_MESSAGE(is_entry_name(p), "left behind: " << p);
  // Valid: a fifth process loads every kernel and compiles nothing.
  Ran fifth = run(child(env));
  REQUIRE_MESSAGE(fifth.status == 0, fifth.output);
  auto kv = parse_counters(fifth.output);
  CHECK(num(kv, "kernels_compiled") == 0);
  CHECK(num(kv, "disk_rejected") == 0);
  CHECK(num(kv, "disk_hits") == int64_t(entries.size()));
  CHECK(kv.at("checksum") == checksum);
}

TEST_CASE("the cache directory comes from RLX_CACHE_DIR, XDG_CACHE_HOME or HOME, and off writes "
          "nothing") {
  TempDir dir;
  fs::path xdg = dir.path / "xdg", home = dir.path / "home";
  fs::create_directories(home);
  std::string base = "env -u RLX_CACHE_DIR -u XDG_CACHE_HOME HOME='" + home.string() + "'";

  Ran r = run(child(base + " XDG_CACHE_HOME='" + xdg.string() + "'"));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(num(parse_counters(r.output), "disk_misses") >= 2);
  CHECK(files_under(xdg / "rlx").size() >= 2);
  CHECK(files_under(home).empty());

  r = run(child(base));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(files_under(home / ".cache" / "rlx").size() >= 2);

  fs::remove_all(home);
  fs::create_directories(home);
  r = run(child(base + " RLX_CACHE_DIR=off"));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  auto kv = parse_counters(r.output);
  CHECK(num(kv, "disk_misses") == 0);
  CHECK(num(kv, "disk_hits") == 0);
  CHECK(num(kv, "kernels_compiled") >= 2);
  CHECK(files_under(home).empty());
}

TEST_CASE("a cache directory that cannot be written is counted and otherwise ignored") {
  TempDir dir;
  write(dir.path / "file", "not a directory");
  CacheDirScope scope((dir.path / "file" / "cache").string());
  rlx::CacheStats s0 = rlx::cache_stats();
  std::vector<float> got = compute();
  rlx::CacheStats d = since(s0);
  CHECK(d.kernels_compiled >= 2);
  CHECK(d.disk_write_errors == d.kernels_compiled);
  CHECK(close_to(got, compute(rlx::Backend::Interp)));
}

/// A child process that must finish within a minute: a read that hangs (a FIFO waiting for a
/// writer) fails the test instead of stalling the suite.
Ran run_bounded(const std::string& env) { return run(child(env + " timeout 60")); }

TEST_CASE("entry paths holding a FIFO, a link to /dev/zero or a directory are rejected at once") {
  struct Special {
    const char* name;
    bool rewritten; ///< rename() replaces it with a valid entry (not a directory)
    void (*make)(const fs::path& p);
  };
  const Special specials[] = {
      {"a FIFO", true, [](const fs::path& p) { REQUIRE(::mkfifo(p.c_str(), 0600) == 0); }},
      {"a link to /dev/zero", true, [](const fs::path& p) { fs::create_symlink("/dev/zero", p); }},
      {"a link to a valid entry", true,
       [](const fs::path& p) {
         fs::rename(p.string() + ".saved", p.string() + ".elsewhere");
         fs::create_symlink(p.string() + ".elsewhere", p);
       }},
      {"a directory", false, [](const fs::path& p) { fs::create_directory(p); }}};
  for (const Special& sp : specials) {
    SUBCASE(sp.name) {
      TempDir dir;
      std::string env = "RLX_CACHE_DIR='" + dir.str() + "'";
      Ran first = run_bounded(env);
      REQUIRE_MESSAGE(first.status == 0, first.output);
      std::vector<fs::path> entries = files_under(dir.path);
      REQUIRE(entries.size() >= 2);
      for (const fs::path& p : entries) {
        fs::rename(p, p.string() + ".saved");
        sp.make(p);
        if (fs::exists(p.string() + ".saved")) fs::remove(p.string() + ".saved");
      }
      Ran second = run_bounded(env);
      REQUIRE_MESSAGE(second.status == 0, second.output); // 124: timed out
      auto kv = parse_counters(second.output);
      CHECK(num(kv, "disk_rejected") == int64_t(entries.size()));
      CHECK(num(kv, "disk_hits") == 0);
      CHECK(num(kv, "kernels_compiled") == int64_t(entries.size()));
      CHECK(num(kv, "agree") == 1);
      CHECK(kv.at("checksum") == parse_counters(first.output).at("checksum"));
      if (!sp.rewritten) continue;
      for (const fs::path& p : entries) {
        CHECK_MESSAGE(fs::is_regular_file(fs::symlink_status(p)), p);
        CHECK(read(p).size() > 64);
      }
      Ran third = run_bounded(env);
      REQUIRE_MESSAGE(third.status == 0, third.output);
      CHECK(num(parse_counters(third.output), "disk_hits") == int64_t(entries.size()));
    }
  }
}

TEST_CASE("the cache directories rlx makes are private to the user, and so are the entries") {
  TempDir dir;
  fs::path root = dir.path / "made" / "by" / "rlx";
  Ran r = run_bounded("RLX_CACHE_DIR='" + root.string() + "'");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  std::vector<fs::path> entries = files_under(root);
  REQUIRE(entries.size() >= 2);
  auto mode = [](const fs::path& p) {
    struct stat st{};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 0777;
  };
  CHECK(mode(root) == 0700);
  CHECK(mode(entries[0].parent_path()) == 0700);
  for (const fs::path& p : entries) CHECK(mode(p) == 0600);
}

namespace {

/// The child run with the cache in `root` after `spoil` made the directory unsafe: the disk
/// cache must be off (nothing loaded, nothing written) with exactly one warning naming why.
void check_refused(const fs::path& root, const std::string& why) {
  Ran r = run_bounded("RLX_CACHE_DIR='" + root.string() + "'");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  auto kv = parse_counters(r.output);
  CHECK(num(kv, "disk_hits") == 0);
  CHECK(num(kv, "disk_misses") == 0);
  CHECK(num(kv, "kernels_compiled") >= 2);
  CHECK(num(kv, "agree") == 1);
  std::vector<std::string> warnings = lines_with(r.output, "rlx: warning: the kernel cache");
  REQUIRE_MESSAGE(warnings.size() == 1, r.output);
  CHECK_MESSAGE(warnings[0].find(why) != npos, warnings[0]);
  CHECK(warnings[0].find("the disk cache is off") != npos);
}

} // namespace

TEST_CASE("a cache directory others may write to is refused with one warning, entries unread") {
  TempDir dir;
  Ran first = run_bounded("RLX_CACHE_DIR='" + dir.str() + "'");
  REQUIRE_MESSAGE(first.status == 0, first.output);
  std::vector<fs::path> entries = files_under(dir.path);
  REQUIRE(entries.size() >= 2);
  SUBCASE("the root, mode 0777") {
    fs::permissions(dir.path, fs::perms::all);
    check_refused(dir.path, "others may write to it (mode 0777)");
  }
  SUBCASE("the version directory holding the entries, mode 0775") {
    fs::permissions(entries[0].parent_path(), fs::perms::owner_all | fs::perms::group_all |
                                                  fs::perms::others_read | fs::perms::others_exec);
    check_refused(dir.path, "others may write to it (mode 0775)");
  }
  CHECK(files_under(dir.path) == entries); // nothing rewritten
}

TEST_CASE("a cache directory that belongs to another user is refused with one warning") {
  if (::geteuid() == 0) {
    // As root (CI): give a cache directory to nobody.
    TempDir dir;
    REQUIRE(::chown(dir.path.c_str(), 65534, 65534) == 0);
    check_refused(dir.path, "belongs to another user (uid 65534)");
    CHECK(files_under(dir.path).empty());
  } else {
    // As another user: / belongs to root, and rlx cannot make its directory there.
    check_refused("/", "belongs to another user (uid 0)");
  }
}

TEST_CASE("RLX_LOG=compile prints one line per kernel: name, ops, origin and milliseconds") {
  TempDir dir;
  std::string env = "RLX_LOG=compile RLX_CACHE_DIR='" + dir.str() + "'";
  Ran first = run(child(env));
  REQUIRE_MESSAGE(first.status == 0, first.output);
  int64_t kernels = num(parse_counters(first.output), "kernels_compiled");
  std::vector<std::string> lines = lines_with(first.output, "rlx: compile ");
  CHECK(int64_t(lines.size()) == kernels);
  for (const std::string& l : lines) {
    CHECK_MESSAGE(l.find("from=compiled") != std::string::npos, l);
    CHECK_MESSAGE(l.find(" rlx_k") != std::string::npos, l);
    CHECK_MESSAGE(l.find(" ms=") != std::string::npos, l);
  }
  CHECK(first.output.find("ops=mul,add,tanh") != std::string::npos);
  CHECK(first.output.find("ops=mul,exp,sub") != std::string::npos);

  Ran second = run(child(env));
  REQUIRE_MESSAGE(second.status == 0, second.output);
  lines = lines_with(second.output, "rlx: compile ");
  CHECK(int64_t(lines.size()) == kernels);
  for (const std::string& l : lines) CHECK_MESSAGE(l.find("from=disk") != std::string::npos, l);

  Ran bad = run(child("RLX_LOG=everything RLX_CACHE_DIR=off"));
  CHECK(bad.status != 0);
  CHECK(bad.output.find("RLX_LOG=everything") != std::string::npos);
}

TEST_CASE("the debug options dump the graph, the plan, the LLVM IR and the assembly") {
  TempDir dir;
  CacheDirScope scope((dir.path / "cache").string());
  fs::path dumps = dir.path / "dumps";
  CaptureStderr err(dir.path / "stderr.txt");
  {
    DebugScope debug(
        {.log_compile = true, .dump = "graph,lir,llvm,asm", .dump_dir = dumps.string()});
    compute();
  }
  std::string log = err.finish();
  std::vector<std::string> lines = lines_with(log, "rlx: compile ");
  REQUIRE(lines.size() >= 2);

  std::map<std::string, std::string> files; // by suffix
  std::vector<std::string> kernels;
  for (const fs::path& p : files_under(dumps)) {
    std::string n = p.filename().string();
    for (const char* suffix : {".graph.txt", ".lir.txt", ".opt.ll", ".ll", ".s"})
      if (n.size() > std::string(suffix).size() && n.ends_with(suffix)) {
        files[suffix] += read(p);
        if (std::string(suffix) == ".ll" && !n.ends_with(".opt.ll"))
          kernels.push_back(n.substr(0, n.size() - 3));
        break;
      }
  }
  CHECK(files[".graph.txt"].find("graph @") != std::string::npos);
  CHECK(files[".graph.txt"].find("tanh(") != std::string::npos);
  REQUIRE(kernels.size() == lines.size());
  for (const std::string& k : kernels) {
    CHECK_MESSAGE(log.find("rlx: compile " + k + " ") != std::string::npos, k);
    CHECK_MESSAGE(files[".ll"].find("define void @" + k + "(") != std::string::npos, k);
  }
  // The plan: the fused element-wise kernel by name with its nodes, then the steps.
  const std::string& lir = files[".lir.txt"];
  CHECK(std::any_of(kernels.begin(), kernels.end(),
                    [&](const std::string& k) { return lir.find("kernel " + k) != npos; }));
  CHECK(lir.find("tanh(") != npos);
  CHECK(lir.find("outputs: %") != npos);
  CHECK(lir.find("steps:") != npos);
  CHECK(files[".opt.ll"].find("define void @rlx_") != std::string::npos);
  // The assembly defines the content-addressed symbols that the optimized IR defines.
  std::size_t at = files[".opt.ll"].find("define void @rlx_");
  REQUIRE(at != std::string::npos);
  std::string symbol = files[".opt.ll"].substr(at + 13, 4 + 32);
  CHECK_MESSAGE(files[".s"].find(symbol + ":") != std::string::npos, symbol);
  CHECK(files[".s"].find("ret") != std::string::npos);

  // Dumps describe code served from the caches too; no dumps once the options are off.
  rlx::clear_cache();
  fs::remove_all(dumps);
  compute();
  CHECK(files_under(dumps).empty());
}

TEST_CASE("debug options other than graph, lir, llvm and asm are rejected") {
  rlx::DebugOptions saved = rlx::debug_options();
  rlx::test::check_error([] { rlx::set_debug_options({.dump = "llvm,bytecode"}); },
                         rlx::ErrorKind::Value, "bytecode");
  CHECK(rlx::debug_options().dump == saved.dump);
  rlx::set_debug_options({.dump = " graph , asm "});
  CHECK(rlx::debug_options().dump == " graph , asm ");
  rlx::set_debug_options(saved);
}
