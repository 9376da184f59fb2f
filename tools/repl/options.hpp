// tools/repl/options.hpp -- rlx-repl's command line.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlx::repl {

struct Options {
  std::optional<std::string> file{}; ///< a script to run ("-": standard input)
  std::vector<std::string> clang_args{};
  std::string opt_level = "-O1";
  bool timing = false;
  bool sandbox = true;
  bool pch = true;      ///< use the precompiled prelude when it fits (see pch_fits)
  bool verbose = false; ///< say on stderr which precompiled prelude the session loads
  double parse_timeout = 30;
  std::optional<std::string> history{}; ///< unset: $RLX_REPL_HISTORY, else ~/.rlx_repl_history
  bool quiet = false;
  bool help = false;
  bool version = false;
};

/// A bad command line (exit status 2).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Options parse_options(const std::vector<std::string>& args);

/// Where rlx's headers and the prelude are: below the executable's prefix when rlx-repl is
/// installed (<prefix>/bin/rlx-repl, <prefix>/include/rlx, <prefix>/share/rlx/repl), else in
/// the source tree it was built from.
struct Layout {
  std::string rlx_include; ///< for -I ("" for /usr/include, which clang searches anyway)
  std::string headers;     ///< the directory of rlx's headers (<include>/rlx)
  std::string prelude_dir; ///< the folder of rlx_repl_prelude.hpp
  bool installed = false;
};
const Layout& layout();

/// Whether a precompiled prelude may serve `options`: wanted, and the cells' -O level and
/// macros are the ones it is built with (extra -I directories are fine).
bool pch_fits(const Options& options);

/// Whether the build tree's precompiled prelude applies: it fits, rlx-repl runs from the
/// build tree and the PCH is there. (An installed rlx-repl uses prelude_pch.hpp's.)
bool uses_pch(const Options& options);

/// The compiler arguments for clang: C++20, the optimization level, rlx's headers and the
/// prelude's, clang's resource directory, the precompiled prelude `pch_file` unless empty,
/// then the user's -I/-D/--Xcc.
std::vector<std::string> compiler_args_with_pch(const Options& options,
                                                const std::string& pch_file);
/// The same with the build tree's PCH when `pch`.
std::vector<std::string> compiler_args(const Options& options, bool pch);

/// The text of --help.
std::string usage();

} // namespace rlx::repl
