// tools/repl/line_input.cpp -- terminal (libedit's readline interface) and stream line sources.
#include "line_input.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <utility>

#ifdef RLX_REPL_LIBEDIT
#include <editline/readline.h>
#endif

namespace rlx::repl {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int) { g_interrupted = 1; }

/// SIGINT sets g_interrupted, without SA_RESTART so that a blocked read returns, for the
/// lifetime of the guard.
class InterruptGuard {
public:
  InterruptGuard() {
    g_interrupted = 0;
    struct sigaction sa{};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
  }
  ~InterruptGuard() { sigaction(SIGINT, &old_, nullptr); }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

private:
  struct sigaction old_{};
};

class StreamInput final : public LineInput {
public:
  explicit StreamInput(std::istream& in) : in_(in) {}
  std::optional<std::string> read(const std::string&) override {
    if (next_) return std::exchange(next_, std::nullopt);
    return get();
  }
  std::optional<std::string> peek() override {
    if (!next_) next_ = get();
    return next_;
  }

private:
  std::optional<std::string> get() {
    std::string line;
    if (!std::getline(in_, line)) return std::nullopt;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }
  std::istream& in_;
  std::optional<std::string> next_;
};

#ifdef RLX_REPL_LIBEDIT
class TerminalInput final : public LineInput {
public:
  explicit TerminalInput(std::string history_file) : history_file_(std::move(history_file)) {
    rl_readline_name = "rlx-repl";
    // libedit's own handlers would pass Ctrl-C on to the whole process group (kill(0, ...)).
    rl_catch_signals = 0;
    rl_bind_key('\t', rl_insert); // a tab is indentation, not file-name completion
    using_history();
    if (!history_file_.empty()) read_history(history_file_.c_str());
  }
  std::optional<std::string> read(const std::string& prompt) override {
    char* raw = nullptr;
    {
      InterruptGuard guard;
      raw = readline(prompt.c_str());
      interrupted_ = raw == nullptr && g_interrupted;
    }
    if (raw == nullptr) return std::nullopt;
    std::string line(raw);
    std::free(raw);
    if (!line.empty() && line.find_first_not_of(" \t") != std::string::npos) {
      add_history(line.c_str());
      if (!history_file_.empty()) write_history(history_file_.c_str());
    }
    return line;
  }
  std::optional<std::string> peek() override { return std::nullopt; }
  bool interrupted() const override { return interrupted_; }

private:
  std::string history_file_;
  bool interrupted_ = false;
};
#else
class TerminalInput final : public LineInput {
public:
  explicit TerminalInput(const std::string&) {}
  std::optional<std::string> read(const std::string& prompt) override {
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
    std::string line;
    InterruptGuard guard;
    interrupted_ = false;
    if (!std::getline(std::cin, line)) {
      interrupted_ = g_interrupted;
      std::cin.clear();
      return std::nullopt;
    }
    return line;
  }
  std::optional<std::string> peek() override { return std::nullopt; }
  bool interrupted() const override { return interrupted_; }

private:
  bool interrupted_ = false;
};
#endif

} // namespace

std::unique_ptr<LineInput> terminal_input(const std::string& history_file) {
  return std::make_unique<TerminalInput>(history_file);
}

std::unique_ptr<LineInput> stream_input(std::istream& in) {
  return std::make_unique<StreamInput>(in);
}

bool have_line_editing() {
#ifdef RLX_REPL_LIBEDIT
  return true;
#else
  return false;
#endif
}

} // namespace rlx::repl
