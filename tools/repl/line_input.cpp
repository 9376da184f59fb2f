// tools/repl/line_input.cpp -- terminal (libedit's readline interface) and stream line sources.
#include "line_input.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
// libedit's completion hooks are plain functions: they reach the terminal's completer here.
Completer* g_complete = nullptr;
std::vector<std::string> g_matches;
std::size_t g_next_match = 0;

extern "C" char* rlx_repl_next_match(const char*, int state) {
  if (state == 0) g_next_match = 0;
  if (g_next_match >= g_matches.size()) return nullptr;
  return strdup(g_matches[g_next_match++].c_str());
}

/// Tab: the identifier `text` ends at the cursor; completions replace it. After blanks only,
/// Tab indents instead.
extern "C" char** rlx_repl_attempt_completion(const char* text, int, int) {
  rl_attempted_completion_over = 1; // never file names
  std::string before(rl_line_buffer, std::size_t(std::max(rl_point, 0)));
  g_matches.clear();
  if (before.find_first_not_of(" \t") == std::string::npos) {
    g_matches.push_back(std::string(text) + "\t"); // the one completion: a tab
    return rl_completion_matches(text, rlx_repl_next_match);
  }
  if (g_complete == nullptr || !*g_complete) return nullptr;
  std::string typed(text);
  // Nothing typed yet: complete members (after `.`, `->`, `::`), not every name there is.
  char before_word = before.size() > typed.size() ? before[before.size() - typed.size() - 1] : ' ';
  if (typed.empty() && before_word != '.' && before_word != '>' && before_word != ':')
    return nullptr;
  for (std::string& name : (*g_complete)(before))
    if (name.starts_with(typed)) g_matches.push_back(std::move(name));
  if (g_matches.empty()) return nullptr;
  return rl_completion_matches(text, rlx_repl_next_match);
}

class TerminalInput final : public LineInput {
public:
  TerminalInput(std::string history_file, Completer complete)
      : history_file_(std::move(history_file)), complete_(std::move(complete)) {
    rl_readline_name = "rlx-repl";
    // libedit's own handlers would pass Ctrl-C on to the whole process group (kill(0, ...)).
    rl_catch_signals = 0;
    // A completed word is an identifier: everything else breaks words.
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{}()[].,:+-*/%!^~?#";
    rl_completion_append_character = '\0';
    rl_attempted_completion_function = rlx_repl_attempt_completion;
    g_complete = &complete_;
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
  ~TerminalInput() override { g_complete = nullptr; }
  TerminalInput(const TerminalInput&) = delete;
  TerminalInput& operator=(const TerminalInput&) = delete;

private:
  std::string history_file_;
  Completer complete_;
  bool interrupted_ = false;
};
#else
class TerminalInput final : public LineInput {
public:
  TerminalInput(const std::string&, const Completer&) {}
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

std::unique_ptr<LineInput> terminal_input(const std::string& history_file, Completer complete) {
  return std::make_unique<TerminalInput>(history_file, std::move(complete));
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
