// tools/repl/engine.hpp -- clang's incremental interpreter behind a header free of clang and LLVM.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::repl {

/// clang::Interpreter (clang 19) compiling C++ into this process, with our diagnostics printer.
/// Code it runs calls rlx directly: rlx-repl is linked with rlx whole and exports its symbols.
class Engine {
public:
  /// `args` are the compiler's (-std=c++20, -I..., -resource-dir ...). Throws std::runtime_error
  /// when clang cannot be set up.
  explicit Engine(const std::vector<std::string>& args);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Parse `code` as the next input (clang prints errors on stderr unless `quiet`). On success
  /// the input waits for execute(); on failure clang has already dropped it.
  bool parse(std::string_view code, bool quiet);
  /// Run the input parsed last. A C++ exception it throws propagates to the caller (the input
  /// stays: its code may be referenced by values it made). An input using a symbol nothing
  /// defines is not run but undone, and returns false with `error` naming the symbols; another
  /// JIT failure returns false with LLVM's message.
  bool execute(std::string& error);
  /// Drop the input parsed last without running it (false with `error` when clang cannot).
  bool discard(std::string& error);
  /// Completions at the end of `code` (the text before the cursor) from clang's code
  /// completer: the names that continue the identifier being typed (the whole names; `prefix`
  /// is set to the part already typed), sorted, without duplicates. It builds a second compiler
  /// that sees this session's declarations: call it in a throwaway copy (run_in_copy), since it
  /// changes the session's AST and clang 19 may crash in it.
  std::vector<std::string> complete(std::string_view code, std::string& prefix);
  /// The clang version string ("19.1.7").
  static std::string clang_version();
  /// clang's full version line (vendor, version, repository), which a PCH depends on.
  static std::string clang_full_version();

  /// Build a PCH in this process, as clang++ with the driver arguments `args` would (the
  /// driver turns them into one -cc1 job, which runs clang's GeneratePCHAction). Returns "" on
  /// success, else clang's diagnostics.
  static std::string build_pch(const std::vector<std::string>& args);
  /// A 64-bit checksum of `bytes` (LLVM's xxh3), stable across runs and processes.
  static uint64_t hash(std::string_view bytes);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace rlx::repl
