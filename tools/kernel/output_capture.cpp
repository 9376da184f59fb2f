// tools/kernel/output_capture.cpp -- fds 1 and 2 into memfds, read back and emptied by take().
#include "output_capture.hpp"

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace rlx::kernel {

namespace {

void redirect(int fd, const char* name) {
  int mem = memfd_create(name, MFD_CLOEXEC);
  if (mem < 0 || dup2(mem, fd) < 0) throw std::runtime_error("cannot capture the cells' output");
  close(mem);
}

} // namespace

OutputCapture::OutputCapture() {
  std::fflush(stdout);
  std::fflush(stderr);
  saved_stdout_ = fcntl(1, F_DUPFD_CLOEXEC, 3);
  saved_stderr_ = fcntl(2, F_DUPFD_CLOEXEC, 3);
  redirect(1, "rlx-kernel-stdout");
  redirect(2, "rlx-kernel-stderr");
}

OutputCapture::~OutputCapture() {
  std::fflush(stdout);
  std::fflush(stderr);
  if (saved_stdout_ >= 0) dup2(saved_stdout_, 1), close(saved_stdout_);
  if (saved_stderr_ >= 0) dup2(saved_stderr_, 2), close(saved_stderr_);
}

std::string OutputCapture::take(int fd) {
  std::cout.flush();
  std::cerr.flush();
  std::clog.flush();
  std::fflush(fd == 1 ? stdout : stderr);
  off_t end = lseek(fd, 0, SEEK_CUR);
  std::string text(end > 0 ? std::size_t(end) : 0, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = pread(fd, text.data() + got, text.size() - got, off_t(got));
    if (n <= 0) break;
    got += std::size_t(n);
  }
  text.resize(got);
  if (ftruncate(fd, 0) != 0) return text;
  lseek(fd, 0, SEEK_SET);
  return text;
}

void OutputCapture::log(const std::string& text) const {
  std::string line = text + "\n";
  if (saved_stderr_ >= 0 && write(saved_stderr_, line.data(), line.size()) < 0) return;
}

} // namespace rlx::kernel
