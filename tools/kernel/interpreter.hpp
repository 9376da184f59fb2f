// tools/kernel/interpreter.hpp -- rlx-kernel's xeus interpreter: notebook cells run through
// rlx-repl's session (tools/repl/session.hpp), their output and values sent to the notebook.
#pragma once

#include "output_capture.hpp"
#include "session.hpp"

#include <xeus/xinterpreter.hpp>

namespace rlx::kernel {

class Interpreter : public xeus::xinterpreter {
public:
  /// Runs cells in `session`; `capture` holds the process's stdout and stderr.
  Interpreter(repl::Session& session, OutputCapture& capture);

private:
  void configure_impl() override {}
  nl::json execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                bool store_history, nl::json user_expressions,
                                bool allow_stdin) override;
  nl::json complete_request_impl(const std::string& code, int cursor_pos) override;
  nl::json inspect_request_impl(const std::string& code, int cursor_pos, int detail_level) override;
  nl::json is_complete_request_impl(const std::string& code) override;
  nl::json kernel_info_request_impl() override;
  void shutdown_request_impl() override {}

  /// Send what the cells wrote to stdout and stderr so far as stream messages.
  void flush_streams();
  /// Publish the failure of the cell `where` and return the error reply.
  nl::json report_failure(const std::string& where);

  repl::Session& session_;
  OutputCapture& capture_;
};

/// Block SIGINT on this thread, ignored, for threads started from now on (xeus's) and between
/// cells; execute requests take it while cells run (rlx-repl's crash guard then handles it).
void ignore_interrupts_between_cells();

} // namespace rlx::kernel
