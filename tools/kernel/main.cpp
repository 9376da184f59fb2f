// tools/kernel/main.cpp -- rlx-kernel: a Jupyter kernel (xeus) running C++ cells in an rlx-repl
// session. Jupyter starts it as `rlx-kernel -f CONNECTION_FILE` (its kernel.json).
#include "interpreter.hpp"
#include "output_capture.hpp"
#include "session.hpp"

#include <xeus/xhelper.hpp>
#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <xeus/xserver_zmq.hpp>
#include <zmq.hpp>

#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#ifndef RLX_VERSION
#define RLX_VERSION "unknown"
#endif

namespace {

constexpr const char* kUsage =
    "usage: rlx-kernel -f CONNECTION_FILE\n"
    "A Jupyter kernel for C++ with rlx (rlx-repl's sessions: C++20, rlx included, `using\n"
    "namespace rlx;`). Jupyter starts it through its kernelspec (share/jupyter/kernels/rlx).\n"
    "    -f FILE     the connection file Jupyter wrote\n"
    "    --version   print the version\n";

} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  if (xeus::should_print_version(argc, argv)) {
    std::printf("rlx-kernel %s\n", RLX_VERSION);
    return 0;
  }
  std::string connection = xeus::extract_filename(argc, argv);
  if (connection.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  // Cells read no input: Jupyter's stdin channel is not wired to the process's.
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, 0), close(null);

  // Before any thread starts: SIGINT blocked (threads inherit it) and ignored between cells.
  rlx::kernel::ignore_interrupts_between_cells();
  xeus::xconfiguration config;
  try {
    config = xeus::load_configuration(connection);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlx-kernel: cannot read the connection file %s: %s\n", connection.c_str(),
                 e.what());
    return 2;
  }
  rlx::kernel::OutputCapture capture;
  std::unique_ptr<rlx::repl::Session> session;
  try {
    rlx::repl::SessionOptions so;
    so.print_failures = false; // the kernel sends them as Jupyter errors
    session = rlx::repl::start_session(rlx::repl::Options{}, so);
  } catch (const std::exception& e) {
    capture.log(capture.take(2) + "rlx-kernel: cannot start: " + e.what());
    return 2;
  }
  std::string startup = capture.take(2); // a warning (the PCH did not load) goes to the log
  if (!startup.empty()) capture.log(startup);

  auto interpreter = std::make_unique<rlx::kernel::Interpreter>(*session, capture);
  xeus::xkernel kernel(config, xeus::get_user_name(), xeus::make_context<zmq::context_t>(),
                       std::move(interpreter), xeus::make_xserver_zmq);
  kernel.start();
  session.reset(); // the cells' globals are destroyed while rlx is alive
  return 0;
}
