// tools/repl/sandbox.cpp -- the forked copy: a socket pair, one request and one reply per cell.
//
// Request: 4-byte length, 1-byte quiet flag, the code. Reply: 1 byte, 1 when it parsed. The copy
// exits when the socket closes; it never runs a destructor or an atexit handler (_exit).
#include "sandbox.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rlx::repl {

namespace {

using Clock = std::chrono::steady_clock;
constexpr long kPollMs = 50; ///< how often check() asks whether it was interrupted

bool send_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= std::size_t(w);
  }
  return true;
}

bool recv_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= std::size_t(r);
  }
  return true;
}

/// In a forked copy: a crash ends it at once, through no handler the session had installed.
void die_quietly() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, SIG_DFL);
}

} // namespace

std::string Sandbox::Outcome::describe(double timeout_seconds) const {
  switch (kind) {
  case Kind::Parsed:
    return "parsed";
  case Kind::Failed:
    return "did not parse";
  case Kind::Crashed:
    return "killed by signal " + std::to_string(code) + " (" + strsignal(code) + ")";
  case Kind::TimedOut: {
    char s[32];
    std::snprintf(s, sizeof s, "%g", timeout_seconds);
    return std::string("still running after ") + s + " s";
  }
  case Kind::Interrupted:
    return "interrupted (Ctrl-C)";
  case Kind::ForkFailed:
    return "could not fork: " + std::string(std::strerror(code));
  }
  return "";
}

Sandbox::Sandbox(Parse parse, double timeout_seconds)
    : parse_(std::move(parse)), timeout_(timeout_seconds) {}

Sandbox::~Sandbox() { reset(); }

void Sandbox::reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

void Sandbox::child_loop(int fd) {
  for (;;) {
    uint32_t len = 0;
    uint8_t quiet = 0;
    if (!recv_all(fd, &len, sizeof len) || !recv_all(fd, &quiet, 1)) _exit(0);
    std::string code(len, '\0');
    if (!recv_all(fd, code.data(), len)) _exit(0);
    uint8_t ok = parse_(code, quiet != 0) ? 1 : 0;
    std::fflush(stdout);
    std::fflush(stderr);
    if (!send_all(fd, &ok, 1)) _exit(0);
  }
}

bool Sandbox::start(Outcome& out) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    out.kind = Outcome::Kind::ForkFailed;
    out.code = errno;
    return false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    out.kind = Outcome::Kind::ForkFailed;
    out.code = errno;
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    die_quietly();
    // Ctrl-C at the terminal reaches the whole foreground process group: it is the session's
    // to handle, not a crash of the copy. (The copy ends when the session's socket closes.)
    signal(SIGINT, SIG_IGN);
    child_loop(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  pid_ = pid;
  fd_ = fds[0];
  ++forks_;
  return true;
}

Sandbox::Outcome Sandbox::check(std::string_view code, bool quiet,
                                const std::function<bool()>& interrupted) {
  auto t0 = Clock::now();
  Outcome out;
  auto finish = [&](Outcome::Kind kind) {
    out.kind = kind;
    if (kind != Outcome::Kind::Parsed) reset();
    out.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return out;
  };
  if (pid_ < 0 && !start(out)) return finish(Outcome::Kind::ForkFailed);
  std::fflush(stdout);
  std::fflush(stderr);
  uint32_t len = uint32_t(code.size());
  uint8_t q = quiet ? 1 : 0;
  bool sent = send_all(fd_, &len, sizeof len) && send_all(fd_, &q, 1) &&
              send_all(fd_, code.data(), code.size());
  auto deadline = t0 + std::chrono::duration<double>(timeout_);
  uint8_t reply = 0;
  bool got = false;
  while (sent) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return finish(Outcome::Kind::TimedOut);
    if (interrupted()) return finish(Outcome::Kind::Interrupted);
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, int(std::min<long>(left.count() + 1, kPollMs)));
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      got = recv_all(fd_, &reply, 1);
      break;
    }
  }
  if (got) return finish(reply == 1 ? Outcome::Kind::Parsed : Outcome::Kind::Failed);
  // The copy is gone: how did it end?
  close(fd_);
  fd_ = -1;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  out.code = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return finish(Outcome::Kind::Crashed);
}

std::optional<std::string> run_in_copy(const std::function<std::string()>& fn,
                                       double timeout_seconds) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return std::nullopt;
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    die_quietly();
    signal(SIGINT, SIG_IGN);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 2);
    std::string out;
    try {
      out = fn();
    } catch (...) { // the copy must never return into the session's code
      _exit(1);
    }
    uint32_t len = uint32_t(out.size());
    (void)(send_all(fds[1], &len, sizeof len) && send_all(fds[1], out.data(), out.size()));
    _exit(0);
  }
  close(fds[1]);
  std::optional<std::string> result;
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, int(left.count()) + 1);
    if (r < 0 && errno == EINTR) continue;
    uint32_t len = 0;
    std::string out;
    if (r > 0 && recv_all(fds[0], &len, sizeof len)) {
      out.resize(len);
      if (recv_all(fds[0], out.data(), len)) result = std::move(out);
    }
    break;
  }
  close(fds[0]);
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return result;
}

} // namespace rlx::repl
