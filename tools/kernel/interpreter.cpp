// tools/kernel/interpreter.cpp -- execute, complete, is_complete and kernel_info for rlx-kernel.
//
// A notebook cell is cut into rlx-repl's cells (repl::split_cells) and run one by one until one
// fails. While they run, values (a trailing expression) go out as execute_result, rlx::display
// as display_data (a PNG for an image-like tensor), what they print as stream messages, and a
// failure as an error (ename: rlx::Error, CompileError, Interrupted, Crash, ...). SIGINT (the
// notebook's interrupt) is taken only while cells run: rlx-repl's crash guard turns it into
// rlx::request_interrupt, and a cell that never reaches rlx's safe points is abandoned after the
// grace period.
#include "interpreter.hpp"

#include "cells.hpp"
#include "crash_guard.hpp"
#include "png.hpp"
#include "rlx_repl_prelude.hpp"

#include <rlx/display.hpp>

#include <xeus/xhelper.hpp>

#include <cctype>
#include <csignal>
#include <ctime>

#include <pthread.h>

#ifndef RLX_VERSION
#define RLX_VERSION "unknown"
#endif

namespace rlx::kernel {

namespace {

sigset_t only_sigint() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  return s;
}

/// SIGINT unblocked for the life of the object, then blocked and ignored again.
struct InterruptsTaken {
  InterruptsTaken() {
    sigset_t s = only_sigint();
    pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
  }
  ~InterruptsTaken() { ignore_interrupts_between_cells(); }
  InterruptsTaken(const InterruptsTaken&) = delete;
  InterruptsTaken& operator=(const InterruptsTaken&) = delete;
};

/// The byte offset of code point `n` in UTF-8 `text` (Jupyter counts cursors in code points).
std::size_t byte_offset(const std::string& text, int n) {
  std::size_t i = 0;
  for (int seen = 0; i < text.size() && seen < n; ++seen) {
    ++i;
    while (i < text.size() && (uint8_t(text[i]) & 0xC0) == 0x80) ++i;
  }
  return i;
}

int code_points(std::string_view text) {
  int n = 0;
  for (char c : text) n += (uint8_t(c) & 0xC0) != 0x80;
  return n;
}

/// An execute reply for an error (xeus 2.4's create_error_reply swaps ename and evalue).
nl::json error_reply(const std::string& ename, const std::string& evalue,
                     const std::vector<std::string>& traceback) {
  nl::json reply;
  reply["status"] = "error";
  reply["ename"] = ename;
  reply["evalue"] = evalue;
  reply["traceback"] = traceback;
  return reply;
}

} // namespace

void ignore_interrupts_between_cells() {
  sigset_t s = only_sigint();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  signal(SIGINT, SIG_IGN); // drops a pending one too
}

Interpreter::Interpreter(repl::Session& session, OutputCapture& capture)
    : session_(session), capture_(capture) {
  xeus::register_interpreter(this);
}

void Interpreter::flush_streams() {
  std::string out = capture_.take(1);
  if (!out.empty()) publish_stream("stdout", out);
  std::string err = capture_.take(2);
  if (!err.empty()) publish_stream("stderr", err);
}

nl::json Interpreter::report_failure(const std::string& where) {
  std::string out = capture_.take(1);
  if (!out.empty()) publish_stream("stdout", out);
  std::string err = capture_.take(2);
  const repl::Failure& f = session_.last_failure();
  std::string ename = f.name.empty() ? "CompileError" : f.name;
  std::string evalue = f.message;
  std::vector<std::string> traceback;
  if (ename == "CompileError" && evalue.empty()) {
    // clang's diagnostics, printed on stderr by the session: the first error is the value.
    if (!err.empty() && err.back() == '\n') err.pop_back();
    traceback.push_back(err);
    std::size_t at = err.find("error: ");
    evalue = at == std::string::npos ? "the cell does not compile"
                                     : err.substr(at + 7, err.find('\n', at) - at - 7);
  } else {
    if (!err.empty()) publish_stream("stderr", err);
    traceback.push_back(where + ": " + (f.printed.empty() ? ename + ": " + evalue : f.printed));
  }
  publish_execution_error(ename, evalue, traceback);
  return error_reply(ename, evalue, traceback);
}

nl::json Interpreter::execute_request_impl(int execution_counter, const std::string& code, bool,
                                           bool, nl::json, bool) {
  capture_.take(1); // what came between cells (xeus's own messages) is not the cell's
  capture_.take(2);
  std::string source = "In[" + std::to_string(execution_counter) + "]";
  std::string unclosed;
  int unclosed_line = 0;
  std::vector<repl::InputCell> cells = repl::split_cells(code, unclosed, unclosed_line);

  repl::ValueSink old_sink = repl::set_value_sink([&](std::string_view text) {
    flush_streams(); // what the cell printed before the value comes first
    nl::json data;
    data["text/plain"] = std::string(text);
    publish_execution_result(execution_counter, std::move(data), nl::json::object());
  });
  DisplayHandler old_display = set_display_handler([&](const Tensor& t, Loc loc) {
    nl::json data, metadata = nl::json::object();
    data["text/plain"] = t.str(loc);
    if (is_image_like(t)) {
      Image image = to_image(t, loc);
      data["image/png"] = base64(encode_png(image));
      metadata["image/png"] = {{"width", image.width}, {"height", image.height}};
    }
    flush_streams();
    display_data(std::move(data), std::move(metadata), nl::json::object());
  });
  struct Restore {
    repl::ValueSink sink;
    DisplayHandler display;
    ~Restore() {
      repl::set_value_sink(std::move(sink));
      set_display_handler(std::move(display));
    }
  } restore{std::move(old_sink), std::move(old_display)};

  nl::json reply = xeus::create_successful_reply();
  {
    InterruptsTaken taken;
    repl::InterruptCounter presses; // between the cells (each cell takes SIGINT while it runs)
    for (const repl::InputCell& cell : cells) {
      std::string where = source + ":" + std::to_string(cell.line);
      if (presses.pressed()) { // Ctrl-C between two of the notebook cell's cells
        flush_streams();
        std::string message = "the notebook cell was interrupted before its line " +
                              std::to_string(cell.line) + "; the rest was not run";
        std::vector<std::string> traceback{where + ": " + message};
        publish_execution_error("Interrupted", message, traceback);
        return error_reply("Interrupted", message, traceback);
      }
      flush_streams();
      bool ok = true;
      if (cell.meta) {
        session_.run_meta(cell.text, source, cell.line);
        ok = session_.last_failure().name.empty();
      } else {
        ok = session_.run_cell(cell.text, source, cell.line);
      }
      if (!ok) return report_failure(where);
    }
  }
  flush_streams();
  if (!unclosed.empty()) {
    std::string message = "the cell ends inside a cell: " + unclosed + "; it was not run";
    std::string where = source + ":" + std::to_string(unclosed_line);
    std::vector<std::string> traceback{where + ": error: " + message};
    publish_execution_error("CompileError", message, traceback);
    return error_reply("CompileError", message, traceback);
  }
  return reply;
}

nl::json Interpreter::complete_request_impl(const std::string& code, int cursor_pos) {
  std::string before = code.substr(0, byte_offset(code, cursor_pos));
  std::size_t start = before.size();
  while (start > 0 && (std::isalnum(uint8_t(before[start - 1])) || before[start - 1] == '_'))
    --start;
  nl::json matches = nl::json::array();
  for (const std::string& name : session_.complete(before)) matches.push_back(name);
  capture_.take(1); // clang's output in the throwaway copy
  capture_.take(2);
  int cursor_start = cursor_pos - code_points(std::string_view(before).substr(start));
  return xeus::create_complete_reply(matches, cursor_start, cursor_pos);
}

nl::json Interpreter::inspect_request_impl(const std::string&, int, int) {
  return xeus::create_inspect_reply();
}

nl::json Interpreter::is_complete_request_impl(const std::string& code) {
  std::string unclosed;
  int line = 0;
  repl::split_cells(code, unclosed, line);
  if (unclosed.empty()) return xeus::create_is_complete_reply("complete");
  return xeus::create_is_complete_reply("incomplete", "  ");
}

nl::json Interpreter::kernel_info_request_impl() {
  return xeus::create_info_reply("5.3", "rlx-kernel", RLX_VERSION, "c++", "20", "text/x-c++src",
                                 ".cpp", "c++", "text/x-c++src", "",
                                 "rlx-kernel " RLX_VERSION
                                 ": C++20 with rlx, on clang's incremental "
                                 "interpreter (rlx-repl's sessions)");
}

} // namespace rlx::kernel
