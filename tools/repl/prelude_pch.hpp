// tools/repl/prelude_pch.hpp -- which precompiled prelude a session loads: the build tree's, or
// for an installed rlx-repl one built on first use into rlx's cache directory.
#pragma once

#include "options.hpp"

#include <functional>
#include <string>
#include <vector>

namespace rlx::repl {

/// The precompiled prelude a session starts with.
struct PreludePch {
  enum class Origin { None, BuildTree, Reused, Built };
  Origin origin = Origin::None;
  std::string file; ///< for -include-pch ("" with None)
};

/// Whether a session starts with the PCH `file`, asked in a forked copy of the process: clang
/// 19 crashes (in IncrementalParser) on a PCH it rejects.
using PchProbe = std::function<bool(const std::string& file)>;

/// The precompiled prelude for `options` (see compiler_args). Built with rlx-repl, it is the
/// PCH the build made. Installed, it is `<cache>/<rlx version>/repl-prelude-<key>.pch` (the
/// cache is rlx's kernel cache: RLX_CACHE_DIR, else $XDG_CACHE_HOME/rlx, else ~/.cache/rlx),
/// the key naming rlx's version, clang's, the flags and the installed headers (paths, sizes,
/// modification times). That file is a symbolic link to `repl-prelude-<key>-<checksum>.pch`;
/// a file whose contents do not match its checksum is damaged. When the link is missing,
/// dangling or names a damaged file, the PCH is built in a forked copy of this process with
/// clang's GeneratePCHAction into a temporary file, which `loads` must accept before it is
/// renamed into place and linked (racing sessions each write their own; the link always names
/// a complete, checked file). So a PCH is given to clang only when its inputs are unchanged,
/// its bytes are intact and a session once started with it. None, with one notice on stderr,
/// when the cache directory is not writable or the build fails; none, silently, with
/// --no-pch, flags the PCH is not built with, or RLX_CACHE_DIR=off. With `verbose`, a line on
/// stderr says which PCH is used and how.
PreludePch prelude_pch(const Options& options, bool verbose, const PchProbe& loads);

/// The driver arguments that build the prelude's PCH from `header` into `output`: the flags
/// the cells are compiled with (RLX_REPL_PCH_FLAGS, tools/repl/meson.build), the include
/// directories and clang's resource directory of compiler_args.
std::vector<std::string> pch_build_args(const std::string& header, const std::string& output);

} // namespace rlx::repl
