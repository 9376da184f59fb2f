// tools/repl/session.cpp -- how a cell runs: plan, check in a copy, parse, execute, report.
#include "session.hpp"

#include "cells.hpp"
#include "crash_guard.hpp"
#include "prelude_pch.hpp"

#include <rlx/error.hpp>
#include <rlx/ir/text.hpp>
#include <rlx/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <exception>
#include <iostream>
#include <typeinfo>

namespace rlx::repl {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string demangle(const char* name) {
  int status = 0;
  char* s = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && s ? s : name;
  std::free(s);
  return out;
}

/// `text` with every word that is a mangled C++ name (_Z...) demangled.
std::string demangle_words(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t end = text.find_first_of(" ,[]{}()\n", i);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(i, end - i);
    out += word.starts_with("_Z") ? demangle(word.c_str()) : word;
    if (end < text.size()) out += text[end];
    i = end + 1;
  }
  return out;
}

/// The failure for the exception being handled (call inside a catch block).
Failure current_exception_failure() {
  try {
    throw;
  } catch (const rlx::Error& e) {
    return {"rlx::Error", e.what(), std::string("rlx::Error: ") + e.what()};
  } catch (const rlx::InternalError& e) {
    return {"rlx::InternalError", e.what(),
            std::string("rlx::InternalError (a bug in rlx, please report it): ") + e.what()};
  } catch (const std::exception& e) {
    std::string type = demangle(typeid(e).name());
    return {type, e.what(), "exception " + type + ": " + e.what()};
  } catch (...) {
    std::type_info* t = abi::__cxa_current_exception_type();
    std::string type = t ? demangle(t->name()) : std::string("<unknown>");
    return {type, "", "exception of type " + type};
  }
}

/// `#line N "source"`, so clang's errors and std::source_location name the user's lines.
std::string line_directive(const std::string& source, int line) {
  std::string name;
  for (char c : source) {
    if (c == '"' || c == '\\') name += '\\';
    name += c;
  }
  return "#line " + std::to_string(line) + " \"" + name + "\"\n";
}

/// The cell with its top-level `auto` variables made `inline` (see auto_declarations). On a line
/// of its own, `inline` goes on a line before it followed by a #line, so columns stay true.
std::string with_inline_autos(const std::string& cell, const std::string& source, int line) {
  std::string out = cell;
  std::vector<std::size_t> at = auto_declarations(cell);
  for (auto it = at.rbegin(); it != at.rend(); ++it) {
    std::size_t pos = *it;
    std::size_t line_start = cell.rfind('\n', pos == 0 ? 0 : pos - 1);
    line_start = (pos == 0 || line_start == std::string::npos) ? 0 : line_start + 1;
    if (cell.find_first_not_of(" \t", line_start) == pos) {
      int cell_line = line + int(std::count(cell.begin(), cell.begin() + long(pos), '\n'));
      out.insert(line_start, "inline\n" + line_directive(source, cell_line));
    } else {
      out.insert(pos, "inline ");
    }
  }
  return out;
}

void flush_output() {
  std::cout.flush();
  std::fflush(stdout);
}

std::string fixed(double ms) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f", ms);
  return s;
}

std::string plural(int64_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

} // namespace

std::unique_ptr<Session> start_session(const Options& options, SessionOptions so) {
  auto loads = [&](const std::string& file) {
    SessionOptions probe = so;
    probe.sandbox = false;
    probe.compiler_args = compiler_args_with_pch(options, file);
    std::optional<std::string> started = run_in_copy(
        [&] {
          Session session(probe);
          return std::string("started");
        },
        /*timeout_seconds=*/300);
    return started && *started == "started";
  };
  PreludePch pch = prelude_pch(options, options.verbose, loads);
  so.compiler_args = compiler_args_with_pch(options, pch.file);
  try {
    return std::make_unique<Session>(so);
  } catch (const std::exception& e) {
    if (pch.origin == PreludePch::Origin::None) throw;
    std::fprintf(stderr,
                 "rlx-repl: the precompiled prelude %s does not load (%s); parsing the headers "
                 "instead\n",
                 pch.file.c_str(), e.what());
  }
  so.compiler_args = compiler_args_with_pch(options, "");
  return std::make_unique<Session>(so);
}

std::string meta_help() {
  return R"(Type C++ (C++20). rlx is included and `using namespace rlx;` is in effect.
A cell ends at the end of a line where every (, [ and { is closed; a cell ending in an
expression without `;` prints its value (tensors as rlx prints them), e.g.
    Tensor x = arange(0, 6, 1).reshape({2, 3});
    x.sum(-1)
Definitions persist from cell to cell. A compile error, an rlx::Error, any other exception or
a crash (a null pointer, a stack overflow, abort(), a failed assert, std::terminate) fails only
its cell; the session goes on. Tab completes the name before the cursor (clang's completer).
Ctrl-C while typing drops the cell being typed; while a cell runs it interrupts the cell: rlx
work stops at its next safe point, other code is abandoned after 2 s or at a second Ctrl-C.
Commands:
    :help          this text
    :quit          leave (also :q, or end of input / Ctrl-D)
    :timing on|off print each cell's time: c++ (clang checks, parses, compiles the cell),
                   trace (the cell's own code: recording tensor ops, tracing rlx::jit),
                   compile (rlx compiling graphs: graphs, kernels), run (rlx running them)
    :dump          the last materialized graph (after rlx's compile pipeline) and its plan
                   (the JIT's kernels and steps)
)";
}

Session::Session(SessionOptions options) : options_(std::move(options)) {
  auto t0 = Clock::now();
  engine_ = std::make_unique<Engine>(options_.compiler_args);
  // With the PCH, -D__always_inline__=__used__ (tools/repl/meson.build) puts the always-inline
  // functions of the prelude's headers in the PCH's object. Headers a cell includes later must
  // not see it: `used` would emit every member of <atomic>'s specializations into the cell,
  // atomic<long double>'s among them, which call __atomic_load_16 (libatomic, not linked), and
  // every later cell needing a function of that cell's module (shared_ptr's reference counts:
  // any Tensor) would fail to link.
  const std::string prelude =
      "#include <rlx_repl_prelude.hpp>\n#undef __always_inline__\nusing namespace rlx;\n";
  std::string error;
  if (!engine_->parse(prelude, false))
    throw std::runtime_error("the prelude (rlx/rlx.hpp, rlx_repl_prelude.hpp) does not compile");
  if (!engine_->execute(error)) throw std::runtime_error("the prelude does not link: " + error);
  if (options_.sandbox)
    sandbox_ = std::make_unique<Sandbox>(
        [this](std::string_view code, bool quiet) { return engine_->parse(code, quiet); },
        options_.parse_timeout);
  startup_ms_ = ms_since(t0);
}

Session::~Session() {
  flush_output();
  sandbox_.reset();
  engine_.reset();
  flush_output();
}

void Session::fail(const std::string& name, const std::string& message) {
  fail(Failure{name, message, message});
}

void Session::fail(const Failure& failure) {
  ++failures_;
  last_failure_ = failure;
  flush_output();
  if (!failure.printed.empty() && options_.print_failures)
    std::fputs((where_ + ": " + failure.printed + "\n").c_str(), stderr);
  std::fflush(stderr);
}

Session::Checked Session::check(const std::string& code, bool quiet, double& ms) {
  if (!sandbox_) {
    auto t0 = Clock::now();
    bool ok = engine_->parse(code, quiet);
    ms += ms_since(t0);
    return ok ? Checked::Parsed : Checked::Failed;
  }
  Sandbox::Outcome out = sandbox_->check(code, quiet, [this] { return presses_->pressed(); });
  ms += out.ms;
  using Kind = Sandbox::Outcome::Kind;
  if (out.kind == Kind::Parsed) return Checked::Parsed;
  if (out.kind == Kind::Interrupted) return Checked::Interrupted;
  if (out.kind != Kind::Failed && !quiet)
    std::fprintf(stderr, "%s: error: clang failed on this cell (%s); it was not run\n",
                 where_.c_str(), out.describe(options_.parse_timeout).c_str());
  return Checked::Failed;
}

bool Session::execute(Failure& failure) {
  const char* half_done = "; the session goes on, but what the cell was changing may be left "
                          "half done";
  try {
    std::string error;
    bool executed = true;
    Guarded g = run_guarded([&] { executed = engine_->execute(error); }, options_.interrupt_grace);
    if (g.kind == Guarded::Kind::Interrupted) {
      std::string message =
          "error: the cell was interrupted (Ctrl-C) and abandoned" + std::string(half_done);
      failure = {"Interrupted", message, message};
      return false;
    }
    if (g.kind == Guarded::Kind::Crashed) {
      std::string sig = "signal " + std::to_string(g.signal) + ", " + strsignal(g.signal);
      if (g.other_thread) sig += ", on another thread, which is stopped for good";
      std::string message;
      if (!g.terminate.empty())
        message =
            "error: the cell called std::terminate (" + sig + ") while handling " + g.terminate;
      else
        message = "error: the cell crashed (" + sig + ")";
      failure = {"Crash", message + half_done, message + half_done};
      return false;
    }
    if (!executed) {
      if (sandbox_) sandbox_->reset(); // the cell was undone here, not in the copy
      std::string message = "error: the cell does not link: " + demangle_words(error);
      failure = {"LinkError", message, message};
      return false;
    }
  } catch (...) {
    failure = current_exception_failure();
    return false;
  }
  return true;
}

bool Session::run_cell(const std::string& cell, const std::string& source, int line) {
  ++cells_;
  last_failure_ = {};
  where_ = source + ":" + std::to_string(line);
  // Ctrl-C while clang checks or parses the cell: the cell is not run.
  InterruptCounter presses;
  presses_ = &presses;
  struct Reset {
    InterruptCounter*& p;
    ~Reset() { p = nullptr; }
  } reset{presses_};
  const std::string header = line_directive(source, line);
  const std::string body = with_inline_autos(cell, source, line);
  CellPlan plan = plan_cell(wrap_lambda_statements(body, next_wrapper_));
  std::string code;
  double check_ms = 0, parse_ms = 0;
  const char* not_run = "error: the cell was interrupted (Ctrl-C) before it ran; it was not run";
  // In the sandbox a check parses in a copy that is thrown away; without it, a successful
  // check is the parse itself.
  bool parsed = false;
  if (!plan.expression.empty()) {
    // In a function: clang 19 crashes on a lambda in a top-level statement (see cells.hpp).
    std::string show = "__rlx_repl_show_" + std::to_string(next_wrapper_++);
    std::string wrapped = header + plan.statements + "void " + show + "() { ::rlx::repl::show(((" +
                          plan.expression + "\n), ::rlx::repl::NoValue{})); } " + show + "();";
    Checked c = check(wrapped, /*quiet=*/true, check_ms);
    if (c == Checked::Interrupted) {
      fail("Interrupted", not_run);
      return false;
    }
    if (c == Checked::Parsed) {
      code = std::move(wrapped);
      parsed = !options_.sandbox;
    }
  }
  if (code.empty()) {
    std::string plain = header + wrap_lambda_statements(terminated(body), next_wrapper_);
    Checked c = check(plain, /*quiet=*/false, check_ms);
    if (c != Checked::Parsed) {
      if (c == Checked::Interrupted)
        fail("Interrupted", not_run);
      else
        fail("CompileError", "");
      return false;
    }
    code = std::move(plain);
    parsed = !options_.sandbox;
  }
  if (!parsed) { // quiet: the copy has printed clang's warnings already
    auto t0 = Clock::now();
    bool ok = engine_->parse(code, /*quiet=*/true);
    parse_ms = ms_since(t0);
    if (!ok) { // the copy accepted it: clang is not deterministic here
      fail("CompileError", "error: the cell parsed in the sandbox but not in the session");
      return false;
    }
  }
  if (presses.pressed()) { // during the parse, which cannot be stopped
    std::string error;
    if (sandbox_) sandbox_->reset(); // the copy keeps the cell
    if (!engine_->discard(error)) {
      fail("Interrupted", std::string(not_run) + "; clang could not drop it: " + error);
      return false;
    }
    fail("Interrupted", not_run);
    return false;
  }

  CacheStats before = cache_stats();
  auto t0 = Clock::now();
  Failure failure;
  bool ok = execute(failure);
  double exec_ms = ms_since(t0);
  flush_output();
  if (!ok) fail(failure);
  if (options_.timing) {
    CacheStats after = cache_stats();
    double compile = after.compile_ms - before.compile_ms;
    double run = after.run_ms - before.run_ms;
    double trace = std::max(0.0, exec_ms - compile - run);
    int64_t graphs = after.compiles - before.compiles;
    int64_t kernels = after.kernels_compiled - before.kernels_compiled;
    int64_t disk = after.disk_hits - before.disk_hits;
    std::string compiled = plural(graphs, "graph") + ", " + plural(kernels, "kernel") + " compiled";
    if (disk > 0) compiled += ", " + std::to_string(disk) + " from the disk cache";
    std::string text = "time " + fixed(check_ms + parse_ms + exec_ms) + " ms: c++ " +
                       fixed(check_ms + parse_ms) + " · trace " + fixed(trace) + " · compile " +
                       fixed(compile) + " (" + compiled + ") · run " + fixed(run);
    std::printf("%s\n", text.c_str());
    flush_output();
  }
  return ok;
}

std::vector<std::string> Session::complete(const std::string& code) {
  constexpr double kCompleteTimeout = 10; // seconds; the copy is killed after
  auto names_in_copy = [&](const std::string& text) {
    return run_in_copy(
        [&] {
          std::string prefix, joined;
          for (const std::string& name : engine_->complete(text, prefix)) joined += name + '\n';
          return joined;
        },
        kCompleteTimeout);
  };
  std::optional<std::string> found = names_in_copy(code);
  // clang 19 crashes completing in some declarations (`auto y = x.me`): then complete the
  // initializer alone (`x.me`).
  std::size_t eq = code.rfind('=');
  if (!found && eq != std::string::npos && code.find('\n', eq) == std::string::npos)
    found = names_in_copy(code.substr(0, code.rfind('\n', eq) + 1) + code.substr(eq + 1));
  std::vector<std::string> names;
  if (!found) return names;
  std::size_t at = 0;
  while (at < found->size()) {
    std::size_t nl = found->find('\n', at);
    names.push_back(found->substr(at, nl - at));
    at = nl + 1;
  }
  return names;
}

void Session::report_unclosed(const std::string& source, int line, const std::string& what) {
  ++cells_;
  where_ = source + ":" + std::to_string(line);
  fail("CompileError", "error: the input ended inside a cell: " + what + "; the cell was not run");
}

Next Session::run_meta(const std::string& text, const std::string& source, int line) {
  last_failure_ = {};
  where_ = source + ":" + std::to_string(line);
  std::string_view t = trim(text);
  std::string_view name = t.substr(0, t.find_first_of(" \t"));
  std::string_view arg = trim(t.substr(name.size()));
  if (name == ":help" || name == ":h" || name == ":?") {
    std::printf("%s", meta_help().c_str());
  } else if (name == ":quit" || name == ":q" || name == ":exit") {
    return Next::Quit;
  } else if (name == ":timing") {
    if (arg == "on" || arg == "off") {
      options_.timing = arg == "on";
    } else if (!arg.empty()) {
      fail("CommandError", "error: :timing takes on or off, not '" + std::string(arg) + "'");
      return Next::Continue;
    }
    std::printf("timing is %s\n", options_.timing ? "on" : "off");
  } else if (name == ":dump") {
    std::shared_ptr<const Executable> exe = last_run();
    if (!exe) {
      std::printf("nothing has been materialized yet\n");
    } else {
      std::printf("# the last materialized graph, as compiled for the %s backend:\n%s\n%s",
                  std::string(enum_name(exe->backend())).c_str(), ir::to_text(exe->graph()).c_str(),
                  exe->describe().c_str());
    }
  } else {
    fail("CommandError",
         "error: unknown command " + std::string(name) + " (:help lists the commands)");
  }
  flush_output();
  return Next::Continue;
}

} // namespace rlx::repl
