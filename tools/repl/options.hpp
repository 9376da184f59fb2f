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
  bool pch = true; ///< use the precompiled prelude when it fits (see uses_pch)
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

/// Whether the precompiled prelude applies: wanted, built, and the cells' -O level and
/// macros are the ones it was built with.
bool uses_pch(const Options& options);

/// The compiler arguments for clang: C++20, the optimization level, rlx's headers and the
/// prelude's, clang's resource directory, the precompiled prelude when `pch`, then the user's
/// -I/-D/--Xcc.
std::vector<std::string> compiler_args(const Options& options, bool pch);

/// The text of --help.
std::string usage();

} // namespace rlx::repl
