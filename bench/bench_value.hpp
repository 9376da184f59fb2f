// bench/bench_value.hpp -- a measured quantity that is not a time or a rate (bytes of a plan,
// kernels a sweep compiled), as an "@row" line that bench/report.py prints in a table of values
// ("value": true; min = median = max = the value) and reads for its targets.
#pragma once

#include "bench_util.hpp"

#include <cstdio>

namespace bench {

inline void emit_value(const Row& r, double value) {
  std::printf("@row {\"table\":%s,\"peer\":%s,\"threads\":%d,\"size\":%lld,\"base\":false,"
              "\"unit\":%s,\"value\":true,\"min\":%.9g,\"median\":%.9g,\"max\":%.9g,"
              "\"samples\":1,\"batch\":1}\n",
              json_str(r.table).c_str(), json_str(r.peer).c_str(), r.threads,
              static_cast<long long>(r.size), json_str(r.unit).c_str(), value, value, value);
  std::fflush(stdout);
}

} // namespace bench
