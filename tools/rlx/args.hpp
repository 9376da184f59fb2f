// tools/rlx/args.hpp -- command-line option parsing for the rlx tool (specs, parsed args, values).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlx::cli {

/// A malformed command line (unknown option, missing value or operand): exit status 2.
class UsageError : public std::runtime_error {
public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

/// One option a command accepts, e.g. {"--in", true, true} (takes a value, may repeat). An
/// option with `optional_value` takes a value only as `--opt=value`; alone its value is "".
struct OptionSpec {
  std::string_view name;
  bool takes_value = false;
  bool repeatable = false;
  bool optional_value = false;
};

/// A command line split into options (in order of appearance) and positional operands.
class ParsedArgs {
public:
  std::vector<std::string> positional;

  bool has(std::string_view option) const;
  /// Every value given to a repeatable option, in order.
  const std::vector<std::string>& values(std::string_view option) const;
  /// The value of a single-valued option, if given.
  std::optional<std::string> value(std::string_view option) const;

  void add(std::string_view option, std::string value);

private:
  std::map<std::string, std::vector<std::string>, std::less<>> options_;
};

/// Parse `args` (the words after the command name) against `specs`. Accepts `--opt value`,
/// `--opt=value`, `--` (the rest are operands) and `-h` for `--help`. A single-valued option
/// given twice, an unknown option or a missing value is a UsageError.
ParsedArgs parse_args(std::span<const std::string> args, std::span<const OptionSpec> specs);

/// Split `NAME=VALUE` (the value of `option`); a UsageError when there is no '=' or either side
/// is empty, naming the expected `form` (e.g. "NAME=PATH").
std::pair<std::string, std::string> split_assignment(std::string_view option, std::string_view text,
                                                     std::string_view form);

/// A non-negative integer (the value of `option`); a UsageError otherwise.
int64_t parse_size(std::string_view option, std::string_view text);

/// An integer >= `min` (the value of `option`); a UsageError otherwise.
int64_t parse_count(std::string_view option, std::string_view text, int64_t min);

/// A finite non-negative number (the value of `option`); a UsageError otherwise.
double parse_tolerance(std::string_view option, std::string_view text);

} // namespace rlx::cli
