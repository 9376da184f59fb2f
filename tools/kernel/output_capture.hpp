// tools/kernel/output_capture.hpp -- the kernel's stdout and stderr, kept in memory files so that
// what a cell writes (printf, std::cout, clang's diagnostics, threads' output) can be sent to the
// notebook as stream messages.
#pragma once

#include <string>

namespace rlx::kernel {

/// For the life of the object, file descriptors 1 and 2 write into memory files (memfd); a
/// forked child (rlx-repl's parse sandbox) shares them. The original stderr stays reachable for
/// the kernel's own messages (log()).
class OutputCapture {
public:
  OutputCapture();
  ~OutputCapture();
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  /// What was written to `fd` (1 or 2) since the last take, after flushing C's and C++'s
  /// streams. Best effort for other threads: a write racing with the take may be lost.
  std::string take(int fd);
  /// Write `text` on the stderr the kernel was started with (the Jupyter server's log).
  void log(const std::string& text) const;

private:
  int saved_stdout_ = -1;
  int saved_stderr_ = -1;
};

} // namespace rlx::kernel
