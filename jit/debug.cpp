// jit/debug.cpp -- RLX_LOG, RLX_DUMP and the disk cache's directory: options and their API.
#include "debug.hpp"

#include "disk_cache.hpp"
#include "llvm/session.hpp"

#include "rlx/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>

namespace rlx {

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(start, comma - start);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

/// The options as set, and their parsed form.
struct Debug {
  std::mutex mu;
  std::optional<DebugOptions> options; ///< unset until first used
  jit::DebugState state;
};

Debug& debug() {
  static Debug d;
  return d;
}

jit::DebugState parse(const DebugOptions& o) {
  jit::DebugState s;
  s.log_compile = o.log_compile;
  for (const std::string& item : split_list(o.dump)) {
    if (item == "graph")
      s.dump_graph = true;
    else if (item == "lir")
      s.dump_lir = true;
    else if (item == "llvm")
      s.dump_llvm = true;
    else if (item == "asm")
      s.dump_asm = true;
    else
      fail(ErrorKind::Value, "debug options: unknown dump '", item,
           "'; expected a comma-separated subset of graph,lir,llvm,asm");
  }
  s.dump_dir = o.dump_dir.empty() ? std::string("rlx_dump") : o.dump_dir;
  return s;
}

DebugOptions from_environment() {
  DebugOptions o;
  if (const char* log = std::getenv("RLX_LOG")) {
    for (const std::string& item : split_list(log)) {
      if (item == "compile")
        o.log_compile = true;
      else
        fail(ErrorKind::Value, "RLX_LOG=", log, ": unknown item '", item, "'; expected compile");
    }
  }
  if (const char* dump = std::getenv("RLX_DUMP")) o.dump = dump;
  if (const char* dir = std::getenv("RLX_DUMP_DIR")) o.dump_dir = dir;
  return o;
}

/// Locked: the options, read from the environment the first time.
void ensure_initialized(Debug& d) {
  if (d.options) return;
  DebugOptions o = from_environment();
  d.state = parse(o);
  d.options = std::move(o);
}

} // namespace

DebugOptions debug_options() {
  Debug& d = debug();
  std::lock_guard lock(d.mu);
  ensure_initialized(d);
  return *d.options;
}

void set_debug_options(const DebugOptions& options) {
  jit::DebugState state = parse(options);
  Debug& d = debug();
  std::lock_guard lock(d.mu);
  d.options = options;
  d.state = std::move(state);
}

std::string disk_cache_dir() { return jit::disk::root(); }

void set_disk_cache_dir(const std::string& dir) { jit::disk::set_root(dir); }

namespace jit {

DebugState debug_state() {
  Debug& d = debug();
  std::lock_guard lock(d.mu);
  ensure_initialized(d);
  return d.state;
}

void write_dump(const DebugState& d, const std::string& file, std::string_view text) {
  std::error_code ec;
  std::filesystem::create_directories(d.dump_dir, ec);
  std::string path = d.dump_dir + "/" + file;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), std::streamsize(text.size()));
  out.close();
  if (!out) log_line("rlx: RLX_DUMP: cannot write " + path);
}

void log_line(const std::string& line) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::string l = line + "\n";
  std::fwrite(l.data(), 1, l.size(), stderr);
  std::fflush(stderr);
}

void add_kernel_stats(CacheStats& stats) {
  KernelCounters k = kernel_counters();
  stats.kernels_compiled = k.compiled;
  stats.kernel_memory_hits = k.memory_hits;
  stats.kernels_reused = k.reused;
  stats.disk_hits = k.disk_hits;
  stats.disk_misses = k.disk_misses;
  stats.disk_rejected = k.disk_rejected;
  stats.disk_write_errors = k.disk_write_errors;
  stats.kernels_generic = k.generic;
  stats.kernels_specialized = k.specialized;
  stats.kernels_recompiled = k.recompiled;
}

} // namespace jit

} // namespace rlx
