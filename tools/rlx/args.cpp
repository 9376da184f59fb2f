// tools/rlx/args.cpp -- command-line option parsing for the rlx tool.
#include "args.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace rlx::cli {

namespace {

const OptionSpec* find_spec(std::span<const OptionSpec> specs, std::string_view name) {
  for (const OptionSpec& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

} // namespace

bool ParsedArgs::has(std::string_view option) const { return options_.contains(option); }

const std::vector<std::string>& ParsedArgs::values(std::string_view option) const {
  static const std::vector<std::string> kNone;
  auto it = options_.find(option);
  return it == options_.end() ? kNone : it->second;
}

std::optional<std::string> ParsedArgs::value(std::string_view option) const {
  auto it = options_.find(option);
  if (it == options_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

void ParsedArgs::add(std::string_view option, std::string value) {
  auto it = options_.find(option);
  if (it == options_.end())
    it = options_.emplace(std::string(option), std::vector<std::string>{}).first;
  it->second.push_back(std::move(value));
}

ParsedArgs parse_args(std::span<const std::string> args, std::span<const OptionSpec> specs) {
  ParsedArgs out;
  bool options_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (options_done || word == "-" || word.empty() || word[0] != '-') {
      out.positional.push_back(word);
      continue;
    }
    if (word == "--") {
      options_done = true;
      continue;
    }
    std::string name = word == "-h" ? std::string("--help") : word;
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos && name.starts_with("--")) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionSpec* spec = find_spec(specs, name);
    if (spec == nullptr) throw UsageError("unknown option " + quoted(name));
    if (out.has(name) && !spec->repeatable)
      throw UsageError("option " + name + " is given more than once");
    if (spec->optional_value) {
      if (inline_value && inline_value->empty())
        throw UsageError("option " + name + " needs a value after '='");
      out.add(name, inline_value.value_or(""));
      continue;
    }
    if (!spec->takes_value) {
      if (inline_value) throw UsageError("option " + name + " takes no value");
      out.add(name, "");
      continue;
    }
    if (inline_value) {
      if (inline_value->empty()) throw UsageError("option " + name + " needs a value");
      out.add(name, *inline_value);
      continue;
    }
    if (i + 1 >= args.size() || args[i + 1].starts_with("--"))
      throw UsageError("option " + name + " needs a value");
    out.add(name, args[++i]);
  }
  return out;
}

std::pair<std::string, std::string> split_assignment(std::string_view option, std::string_view text,
                                                     std::string_view form) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(std::string(option) + " " + quoted(text) + ": expected " + std::string(form));
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

int64_t parse_size(std::string_view option, std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw UsageError(std::string(option) + " " + quoted(text) +
                     ": expected a non-negative integer size");
  return v;
}

int64_t parse_count(std::string_view option, std::string_view text, int64_t min) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min)
    throw UsageError(std::string(option) + " " + quoted(text) +
                     ": expected an integer >= " + std::to_string(min));
  return v;
}

double parse_tolerance(std::string_view option, std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  double v = s.empty() ? -1.0 : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0)
    throw UsageError(std::string(option) + " " + quoted(text) +
                     ": expected a finite non-negative number");
  return v;
}

} // namespace rlx::cli
