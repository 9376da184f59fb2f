// tools/repl/main.cpp -- rlx-repl: options, the input loop (lines into cells), exit status.
#include "cells.hpp"
#include "engine.hpp"
#include "line_input.hpp"
#include "options.hpp"
#include "session.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <unistd.h>

#ifndef RLX_VERSION
#define RLX_VERSION "unknown"
#endif

namespace rlx::repl {

namespace {

std::string history_file(const Options& o) {
  if (o.history) return *o.history;
  if (const char* env = std::getenv("RLX_REPL_HISTORY")) return env;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.rlx_repl_history";
  return "";
}

/// Read lines into cells and run them until the end of input or :quit. Interactive cells are
/// named `<cell N>`; others by their source and line.
void run_input(Session& session, LineInput& input, const std::string& source, bool interactive,
               CellSplitter& cell) {
  int line_no = 0, first_line = 1, cell_no = 0;
  for (;;) {
    const char* prompt = cell.blank() && cell.complete() ? "rlx> " : "...> ";
    std::optional<std::string> line = input.read(interactive ? prompt : "");
    if (!line && input.interrupted()) { // Ctrl-C: drop what was typed of the cell
      std::fputs("\n", stdout);
      std::fflush(stdout);
      cell.clear();
      continue;
    }
    if (!line) {
      if (cell.complete()) return;
      std::string name = interactive ? "<cell " + std::to_string(cell_no + 1) + ">" : source;
      session.report_unclosed(name, interactive ? 1 : first_line, cell.unclosed());
      cell.clear();
      if (!interactive) return;
      continue; // Ctrl-D inside a cell drops the cell, a second one leaves
    }
    ++line_no;
    bool fresh = cell.blank() && cell.complete(); // nothing pending (not even a comment)
    if (fresh && is_meta_command(*line)) {
      cell.clear();
      ++cell_no;
      std::string name = interactive ? "<cell " + std::to_string(cell_no) + ">" : source;
      if (session.run_meta(*line, name, interactive ? 1 : line_no) == Next::Quit) return;
      continue;
    }
    if (fresh) {
      cell.clear();
      first_line = line_no;
    }
    cell.add_line(*line);
    if (!cell.complete()) continue;
    if (cell.blank()) {
      cell.clear();
      continue;
    }
    if (!interactive) { // Allman style: a line starting with `{` continues the cell
      std::optional<std::string> next = input.peek();
      if (next && trim(*next).starts_with("{")) continue;
    }
    ++cell_no;
    if (interactive)
      session.run_cell(cell.text(), "<cell " + std::to_string(cell_no) + ">", 1);
    else
      session.run_cell(cell.text(), source, first_line);
    cell.clear();
  }
}

int run(const std::vector<std::string>& args) {
  Options options;
  try {
    options = parse_options(args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rlx-repl: %s\n", e.what());
    return 2;
  }
  if (options.help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (options.version) {
    std::printf("rlx-repl %s (clang %s)\n", RLX_VERSION, Engine::clang_version().c_str());
    return 0;
  }
  std::ifstream file;
  std::string source = "<stdin>";
  if (options.file && *options.file != "-") {
    file.open(*options.file);
    if (!file) {
      std::fprintf(stderr, "rlx-repl: cannot read %s\n", options.file->c_str());
      return 2;
    }
    source = *options.file;
  }
  bool interactive = !options.file && isatty(0) && isatty(1);

  SessionOptions so;
  so.timing = options.timing;
  so.sandbox = options.sandbox;
  so.parse_timeout = options.parse_timeout;
  std::unique_ptr<Session> session;
  try {
    session = start_session(options, so);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlx-repl: cannot start: %s\n", e.what());
    return 2;
  }
  if (interactive && !options.quiet)
    std::printf("rlx-repl %s (clang %s, started in %.0f ms). :help for help, :quit to leave.\n",
                RLX_VERSION, Engine::clang_version().c_str(), session->startup_ms());

  CellSplitter cell;
  // Tab completes in the context of the cell typed so far.
  auto complete = [&](const std::string& before_cursor) {
    return session->complete(cell.text().empty() ? before_cursor
                                                 : cell.text() + "\n" + before_cursor);
  };
  std::unique_ptr<LineInput> input =
      interactive ? terminal_input(history_file(options), complete)
                  : stream_input(file.is_open() ? static_cast<std::istream&>(file) : std::cin);
  run_input(*session, *input, source, interactive, cell);
  int failures = session->failures();
  session.reset(); // runs the destructors of the cells' globals while rlx is still alive
  if (interactive) return 0;
  return failures > 0 ? 1 : 0;
}

} // namespace

} // namespace rlx::repl

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return rlx::repl::run(args);
}
