// tools/rlx/commands.hpp -- the rlx tool's subcommands and their usage texts.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace rlx::cli {

/// Each command takes the words after its name and returns the exit status. User mistakes throw
/// rlx::Error (status 1) or UsageError (status 2); main() prints them.
int check_command(std::span<const std::string> args);
int run_command(std::span<const std::string> args);
int compare_command(std::span<const std::string> args);

/// Usage texts (each ends with a newline). `command_usage` returns "" for an unknown command.
std::string_view main_usage();
std::string_view command_usage(std::string_view command);

} // namespace rlx::cli
