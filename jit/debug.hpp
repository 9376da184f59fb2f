// jit/debug.hpp -- RLX_LOG / RLX_DUMP inside the JIT: a snapshot of the options, dump files.
#pragma once

#include "rlx/runtime.hpp"

#include <string>
#include <string_view>

namespace rlx::jit {

/// rlx::debug_options() parsed (include/rlx/runtime.hpp); one snapshot per compile.
struct DebugState {
  bool log_compile = false;
  bool dump_graph = false, dump_lir = false, dump_llvm = false, dump_asm = false;
  std::string dump_dir;
};
DebugState debug_state();

/// Write <dump_dir>/<file> (creating the directory); a failure is reported on stderr, not thrown.
void write_dump(const DebugState& d, const std::string& file, std::string_view text);

/// Fill the kernel counters of `stats` (kernels_compiled, disk_hits, ...).
void add_kernel_stats(CacheStats& stats);

/// One line on stderr, written whole (lines of concurrent compiles do not interleave).
void log_line(const std::string& line);

} // namespace rlx::jit
