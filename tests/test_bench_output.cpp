// tests/test_bench_output.cpp -- the benchmarks' output lines (bench/bench_util.hpp), which
// bench/report.py reads as JSON: every string in them must be a valid JSON string.
#include "../bench/bench_util.hpp"

#include <doctest/doctest.h>

TEST_CASE("benchmark output escapes quotes, backslashes and control characters as JSON requires") {
  // /proc/self/status separates its fields with a tab: bench_bert's memory note printed one raw,
  // and report.py stopped on "Invalid control character".
  CHECK(bench::json_str("VmHWM:\t  130004 kB") == "\"VmHWM:\\u0009  130004 kB\"");
  CHECK(bench::json_str("a\nb\x01") == "\"a\\u000ab\\u0001\"");
  CHECK(bench::json_str("say \"hi\" \\ bye") == "\"say \\\"hi\\\" \\\\ bye\"");
  CHECK(bench::json_str("µs, ×, ≤") == "\"µs, ×, ≤\""); // UTF-8 bytes pass through
}
