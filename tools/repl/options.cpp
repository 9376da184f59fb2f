// tools/repl/options.cpp -- parsing rlx-repl's command line, and its --help.
#include "options.hpp"

#include "session.hpp"

#include <cstdlib>
#include <filesystem>

#ifndef RLX_REPL_RLX_INCLUDE
#error "RLX_REPL_RLX_INCLUDE (rlx's include directory) must be defined by the build"
#endif
#ifndef RLX_REPL_PRELUDE_DIR
#error "RLX_REPL_PRELUDE_DIR (the folder of rlx_repl_prelude.hpp) must be defined by the build"
#endif
#ifndef RLX_REPL_PCH
#define RLX_REPL_PCH ""
#define RLX_REPL_PCH_OPT ""
#endif
#ifndef RLX_REPL_RESOURCE_DIR
#error "RLX_REPL_RESOURCE_DIR (clang's resource directory) must be defined by the build"
#endif

namespace rlx::repl {

namespace {

double parse_seconds(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0))
    throw UsageError(flag + " takes a positive number of seconds, not '" + text + "'");
  return v;
}

} // namespace

const Layout& layout() {
  static const Layout l = [] {
    Layout out{RLX_REPL_RLX_INCLUDE, std::string(RLX_REPL_RLX_INCLUDE) + "/rlx",
               RLX_REPL_PRELUDE_DIR, false};
    std::error_code ec;
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return out;
    std::filesystem::path prefix = exe.parent_path().parent_path();
    if (std::filesystem::is_regular_file(prefix / "share/rlx/repl/rlx_repl_prelude.hpp", ec) &&
        std::filesystem::is_regular_file(prefix / "include/rlx/rlx.hpp", ec)) {
      // Not -I/usr/include (it upsets libstdc++'s #include_next): clang searches it anyway.
      out.rlx_include = prefix == "/usr" ? "" : (prefix / "include").string();
      out.headers = (prefix / "include/rlx").string();
      out.prelude_dir = (prefix / "share/rlx/repl").string();
      out.installed = true;
    }
    return out;
  }();
  return l;
}

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--version") {
      o.version = true;
    } else if (a == "-q" || a == "--quiet") {
      o.quiet = true;
    } else if (a == "--timing") {
      o.timing = true;
    } else if (a == "-v" || a == "--verbose") {
      o.verbose = true;
    } else if (a == "--no-pch") {
      o.pch = false;
    } else if (a == "--no-sandbox") {
      o.sandbox = false;
    } else if (a == "--parse-timeout") {
      o.parse_timeout = parse_seconds(a, value(a));
    } else if (a == "--history") {
      o.history = value(a);
    } else if (a == "-O0" || a == "-O1" || a == "-O2" || a == "-O3") {
      o.opt_level = a;
    } else if (a == "-I" || a == "-D") {
      o.clang_args.push_back(a + value(a));
    } else if ((a.starts_with("-I") || a.starts_with("-D")) && a.size() > 2) {
      o.clang_args.push_back(a);
    } else if (a == "--Xcc") {
      o.clang_args.push_back(value(a));
    } else if (a.starts_with("--Xcc=")) {
      o.clang_args.push_back(a.substr(6));
    } else if (a == "-" || !a.starts_with("-")) {
      if (o.file) throw UsageError("one script at most ('" + *o.file + "' and '" + a + "')");
      o.file = a;
    } else {
      throw UsageError("unknown option '" + a + "' (rlx-repl --help lists them)");
    }
  }
  return o;
}

bool pch_fits(const Options& options) {
  if (!options.pch || options.opt_level != RLX_REPL_PCH_OPT) return false;
  for (const std::string& a : options.clang_args)
    if (!a.starts_with("-I")) return false; // a macro or flag the PCH was not built with
  return true;
}

bool uses_pch(const Options& options) {
  if (!pch_fits(options) || std::string_view(RLX_REPL_PCH).empty() || layout().installed)
    return false;
  std::error_code ec;
  return std::filesystem::is_regular_file(RLX_REPL_PCH, ec);
}

std::vector<std::string> compiler_args(const Options& options, bool pch) {
  return compiler_args_with_pch(options, pch ? RLX_REPL_PCH : "");
}

std::vector<std::string> compiler_args_with_pch(const Options& options,
                                                const std::string& pch_file) {
  std::vector<std::string> args = {
      "-std=c++20",          options.opt_level,           "-resource-dir",
      RLX_REPL_RESOURCE_DIR, "-I" + layout().prelude_dir, "-ferror-limit=8"};
  if (!layout().rlx_include.empty()) args.push_back("-I" + layout().rlx_include);
  if (!pch_file.empty()) {
    // As the PCH was built (RLX_REPL_PCH_FLAGS, tools/repl/meson.build).
    args.insert(args.end(), {"-include-pch", pch_file, "-D__always_inline__=__used__"});
  }
  args.insert(args.end(), options.clang_args.begin(), options.clang_args.end());
  return args;
}

std::string usage() {
  return R"(usage: rlx-repl [options] [FILE]

An interactive C++20 prompt for rlx, on clang's incremental interpreter (clang 19): rlx is
linked in, <rlx/rlx.hpp> is included and `using namespace rlx;` is in effect.

  rlx-repl              interactive on a terminal (line editing, history), else reads stdin
  rlx-repl script.cpp   runs the script's cells, then exits
  rlx-repl < script     the same from standard input ('-' names it too)

Options:
  -h, --help            this text
  --version             rlx-repl's and clang's versions
  -q, --quiet           no banner at the interactive prompt
  -I DIR, -D NAME[=V]   an include directory / a macro for the cells
  -O0 | -O1 | -O2 | -O3 how clang optimizes the cells' own code (default -O1; rlx itself is
                        always compiled code; another level than -O1 cannot use the
                        precompiled prelude and starts slower)
  --Xcc ARG             pass ARG to clang (e.g. --Xcc -Wall)
  --timing              start with :timing on
  --parse-timeout S     seconds clang may take to parse a cell (default 30)
  --no-pch              parse rlx's headers at start instead of loading them precompiled
                        (installed, rlx-repl precompiles them on its first start into rlx's
                        cache directory, $RLX_CACHE_DIR or ~/.cache/rlx, and reuses that)
  -v, --verbose         say which precompiled prelude the session loads
  --no-sandbox          parse cells in the session itself instead of first in a forked copy:
                        faster, but a cell clang crashes or hangs on then ends the session
  --history FILE        keep the interactive history there (default $RLX_REPL_HISTORY, else
                        ~/.rlx_repl_history; "" keeps none)

Cells: a cell ends at the end of a line where every (, [ and { is closed (strings,
characters, comments and preprocessor lines are skipped when counting); in a script, a line
starting with { continues the cell before it (Allman-style definitions). A cell ending in an
expression without `;` prints its value: tensors as rlx prints them, numbers, strings,
containers; assignments (`y = x * 2`) print nothing. Each cell is checked in a forked copy of
the session first, so a cell clang rejects never enters the session.

Errors: a compile error prints clang's message (`<stdin>:4:7: error: ...`); an rlx::Error its
message, which names the op, the shapes and the line (`(at <stdin>:4)`); any other exception
its type and what(); a crash (SIGSEGV, SIGFPE, SIGABRT from abort(), assert or
std::terminate, ...) its signal; an interrupted cell (Ctrl-C) says so. The session goes on, and
later cells see every earlier definition. A cell that fails at run time keeps what it declared
(its code may be referenced by values it made); a crashed or abandoned cell may leave what it
was changing half done.

)" + meta_help() +
         R"(
Exit status: 0 when every cell succeeded, 1 when one failed, 2 for a bad command line or when
clang cannot start. rlx's environment variables apply (RLX_BACKEND, RLX_LOG, RLX_DUMP,
RLX_CACHE_DIR, RLX_NUM_THREADS, ...).
)";
}

} // namespace rlx::repl
