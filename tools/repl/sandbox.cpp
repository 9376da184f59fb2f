// tools/repl/sandbox.cpp -- fork, wait with a deadline (a pipe closes when the child ends).
#include "sandbox.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rlx::repl {

std::string ChildOutcome::describe(double timeout_seconds) const {
  switch (kind) {
  case Kind::Exited:
    return "exited with code " + std::to_string(code);
  case Kind::Crashed:
    return "killed by signal " + std::to_string(code) + " (" + strsignal(code) + ")";
  case Kind::TimedOut: {
    char s[32];
    std::snprintf(s, sizeof s, "%g", timeout_seconds);
    return std::string("still running after ") + s + " s";
  }
  case Kind::ForkFailed:
    return "could not fork: " + std::string(std::strerror(code));
  }
  return "";
}

ChildOutcome run_in_child(const std::function<int()>& body, double timeout_seconds) {
  using Clock = std::chrono::steady_clock;
  ChildOutcome out;
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (pipe(fds) != 0) {
    out.kind = ChildOutcome::Kind::ForkFailed;
    out.code = errno;
    return out;
  }
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    out.kind = ChildOutcome::Kind::ForkFailed;
    out.code = errno;
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    int code = body();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code & 0xff);
  }
  close(fds[1]); // the read end sees end-of-file when the child has gone
  auto deadline = t0 + std::chrono::duration<double>(timeout_seconds);
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, int(left.count()) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      char buf[64];
      if (read(fds[0], buf, sizeof buf) <= 0) break; // closed: the child ended
      continue;
    }
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (timed_out) {
    out.kind = ChildOutcome::Kind::TimedOut;
  } else if (WIFSIGNALED(status)) {
    out.kind = ChildOutcome::Kind::Crashed;
    out.code = WTERMSIG(status);
  } else {
    out.code = WEXITSTATUS(status);
  }
  return out;
}

} // namespace rlx::repl
