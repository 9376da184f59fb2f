// tools/rlx/main.cpp -- the rlx command-line tool: dispatch to a command, report errors.
#include "args.hpp"
#include "commands.hpp"

#include <rlx/error.hpp>

#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#ifndef RLX_VERSION
#define RLX_VERSION "unknown"
#endif

namespace rlx::cli {

namespace {

using Command = int (*)(std::span<const std::string>);

Command find_command(std::string_view name) {
  if (name == "check") return check_command;
  if (name == "run") return run_command;
  if (name == "compare") return compare_command;
  return nullptr;
}

/// `rlx help [COMMAND]`.
int help_command(std::span<const std::string> args) {
  if (args.empty()) {
    std::cout << main_usage();
    return 0;
  }
  if (args.size() > 1) throw UsageError("help takes at most one COMMAND");
  std::string_view text = command_usage(args[0]);
  if (text.empty())
    throw UsageError("help: unknown command '" + args[0] + "' (commands: check, run, compare)");
  std::cout << text;
  return 0;
}

int dispatch(const std::vector<std::string>& args, std::string& command) {
  if (args.empty()) {
    std::cerr << main_usage();
    return 2;
  }
  const std::string& first = args[0];
  std::span<const std::string> rest = std::span(args).subspan(1);
  if (first == "--help" || first == "-h") return help_command({});
  if (first == "help") return help_command(rest);
  if (first == "--version") {
    std::cout << "rlx " << RLX_VERSION << '\n';
    return 0;
  }
  Command cmd = find_command(first);
  if (cmd == nullptr) {
    if (first.starts_with("-")) throw UsageError("unknown option '" + first + "'");
    throw UsageError("unknown command '" + first + "' (commands: check, run, compare, help)");
  }
  command = first;
  return cmd(rest);
}

/// Run the tool on argv[1..]; every error becomes a message on stderr and an exit status.
int main_entry(const std::vector<std::string>& args) {
  std::string command;
  try {
    return dispatch(args, command);
  } catch (const UsageError& e) {
    std::cerr << "rlx: error: " << e.what() << "\n"
              << "rlx: see 'rlx " << (command.empty() ? "" : command + " ") << "--help'\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "rlx: error: " << e.what() << '\n';
    return 1;
  } catch (const InternalError& e) {
    std::cerr << "rlx: internal error: " << e.what() << '\n';
    return 3;
  } catch (const std::bad_alloc&) {
    std::cerr << "rlx: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "rlx: internal error: " << e.what() << '\n';
    return 3;
  } catch (...) {
    std::cerr << "rlx: internal error: unknown exception\n";
    return 3;
  }
}

} // namespace
} // namespace rlx::cli

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return rlx::cli::main_entry(args);
}
