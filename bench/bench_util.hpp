// bench/bench_util.hpp -- what the benchmarks share: the sampling loop (warm-up, a batch of calls
// per sample, min/median/p95/max over samples), a fork-join splitter for the peers' 2-thread
// runs, facts about the machine, and the `@row` / `@note` lines that bench/report.py turns into
// tables (one JSON object per line, so the Python peers can print the same format).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bench {

/// What `measure` times: wall-clock time (the default), or with `--clock cpu` the calling
/// thread's CPU time, so time the thread spent descheduled on a loaded machine does not count
/// (cache and memory contention still do). CPU time means something for one-thread rows only:
/// `--clock cpu` runs one thread unless --threads says otherwise.
enum class ClockKind { Wall, ThreadCpu };
inline ClockKind g_clock = ClockKind::Wall;

/// A point in time on the chosen clock.
struct Clock {
  struct time_point {
    double s;
  };
  static time_point now() {
    if (g_clock == ClockKind::ThreadCpu) {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return {double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec)};
    }
    return {
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count()};
  }
};

inline double seconds_since(Clock::time_point t0) { return Clock::now().s - t0.s; }

/// Keeps the compiler from dropping a computation whose result is only in memory.
inline void clobber(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

/// Per-call seconds over the samples (each sample is the mean of `batch` calls).
struct Stats {
  double min = 0, median = 0, p95 = 0, max = 0;
  int samples = 0;
  int64_t batch = 1;
};

inline Stats summarize(std::vector<double> v, int64_t batch) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { // nearest rank
    std::size_t i = std::size_t(std::ceil(q * double(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
  };
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  s.p95 = at(0.95);
  s.samples = int(v.size());
  s.batch = batch;
  return s;
}

struct Budget {
  double min_sample_s = 2e-3; ///< one sample lasts at least this long (a batch of calls)
  double seconds = 1.0;       ///< stop taking samples after this much time ...
  int min_samples = 5;        ///< ... but take at least this many (3 when one call takes more
                              ///< than half of `seconds`)
  int max_samples = 21;
};

/// Time `fn` (one call = one unit of work). Warm-up: one call, then one batch when calls are
/// short; the batch is sized so a sample lasts at least budget.min_sample_s.
template <class F> Stats measure(F&& fn, const Budget& budget = {}) {
  auto t0 = Clock::now();
  fn();
  double first = seconds_since(t0);
  int64_t batch = 1;
  int min_samples =
      first > budget.seconds / 2 ? std::min(3, budget.min_samples) : budget.min_samples;
  if (first < budget.min_sample_s) {
    batch = std::max<int64_t>(1, int64_t(budget.min_sample_s / std::max(first, 1e-9)));
    t0 = Clock::now();
    for (int64_t i = 0; i < batch; ++i) fn();
    double per_call = seconds_since(t0) / double(batch);
    batch = std::max<int64_t>(1, int64_t(std::ceil(budget.min_sample_s / per_call)));
  }
  std::vector<double> samples;
  auto start = Clock::now();
  while (int(samples.size()) < budget.max_samples) {
    if (int(samples.size()) >= min_samples && seconds_since(start) > budget.seconds) break;
    t0 = Clock::now();
    for (int64_t i = 0; i < batch; ++i) fn();
    samples.push_back(seconds_since(t0) / double(batch));
  }
  return summarize(std::move(samples), batch);
}

/// Splits [0, n) over `threads` threads: the caller runs the first chunk, persistent helper
/// threads (asleep between jobs, like rlx's pool) the others. Ranges too small to give every
/// thread `grain` elements use fewer threads -- the same rule as rlx's parallel_for.
class Splitter {
public:
  explicit Splitter(int threads) : threads_(std::max(1, threads)) {
    for (int i = 1; i < threads_; ++i) helpers_.emplace_back([this, i] { work(i); });
  }
  ~Splitter() {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    wake_.notify_all();
    for (auto& t : helpers_) t.join();
  }
  Splitter(const Splitter&) = delete;
  Splitter& operator=(const Splitter&) = delete;

  int threads() const { return threads_; }

  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    int64_t chunks = std::min<int64_t>(threads_, (n + grain - 1) / std::max<int64_t>(grain, 1));
    if (chunks <= 1) {
      fn(0, n);
      return;
    }
    {
      std::lock_guard lock(mu_);
      fn_ = &fn;
      n_ = n;
      chunks_ = chunks;
      pending_.store(chunks - 1);
      ++generation_;
    }
    wake_.notify_all();
    fn(0, n / chunks);
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }

private:
  void work(int index) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int64_t, int64_t)>* fn = nullptr;
      int64_t n = 0, chunks = 0;
      {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
        fn = fn_;
        n = n_;
        chunks = chunks_;
      }
      if (index < chunks) {
        (*fn)(n* index / chunks, n * (index + 1) / chunks);
        pending_.fetch_sub(1, std::memory_order_release);
      }
    }
  }

  int threads_;
  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool quit_ = false;
  uint64_t generation_ = 0;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunks_ = 0;
  std::atomic<int64_t> pending_{0};
};

/// rlx's parallel_for hands out chunks of at least this many elements (jit/executable.cpp);
/// the peers split with the same grain.
constexpr int64_t kGrain = 1 << 15;

// ---- The machine

inline std::string cpuinfo_field(std::string_view key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      std::size_t colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(colon + 2);
    }
  return "";
}

inline bool cpu_has(std::string_view flag) {
  std::string flags = " " + cpuinfo_field("flags") + " ";
  return flags.find(" " + std::string(flag) + " ") != std::string::npos;
}

constexpr bool kBuiltWithAvx512 =
#if defined(__AVX512F__)
    true;
#else
    false;
#endif

// ---- Output lines (parsed by bench/report.py)

inline std::string json_str(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) { // control characters (a tab from /proc) as \u00XX
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
      out += esc;
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// What one result row is: times (seconds per call; smaller is better) or rates (`unit`,
/// larger is better). `base` marks the row the others in its (threads, size) group are divided by.
struct Row {
  std::string table, peer;
  int threads = 1;
  int64_t size = 0;
  bool base = false;
  std::string unit = "s";
};

inline void emit_time(const Row& r, const Stats& s) {
  std::printf("@row {\"table\":%s,\"peer\":%s,\"threads\":%d,\"size\":%lld,\"base\":%s,"
              "\"unit\":\"s\",\"min\":%.6g,\"median\":%.6g,\"p95\":%.6g,\"max\":%.6g,"
              "\"samples\":%d,\"batch\":%lld}\n",
              json_str(r.table).c_str(), json_str(r.peer).c_str(), r.threads,
              static_cast<long long>(r.size), r.base ? "true" : "false", s.min, s.median, s.p95,
              s.max, s.samples, static_cast<long long>(s.batch));
  std::fflush(stdout);
}

/// A rate: `work` units per call divided by the times (min time -> max rate).
inline void emit_rate(const Row& r, const Stats& s, double work) {
  std::printf("@row {\"table\":%s,\"peer\":%s,\"threads\":%d,\"size\":%lld,\"base\":false,"
              "\"unit\":%s,\"min\":%.6g,\"median\":%.6g,\"max\":%.6g,\"samples\":%d,"
              "\"batch\":%lld}\n",
              json_str(r.table).c_str(), json_str(r.peer).c_str(), r.threads,
              static_cast<long long>(r.size), json_str(r.unit).c_str(), work / s.max,
              work / s.median, work / s.min, s.samples, static_cast<long long>(s.batch));
  std::fflush(stdout);
}

/// A line printed under the table's heading.
inline void emit_note(std::string_view table, std::string_view text) {
  std::printf("@note {\"table\":%s,\"text\":%s}\n", json_str(table).c_str(),
              json_str(text).c_str());
  std::fflush(stdout);
}

/// Command-line options every benchmark takes: --budget SECONDS (per measured row), --sizes
/// N,N,..., --threads N,N,... and --clock wall|cpu (see ClockKind).
struct Args {
  double budget = 1.0;
  std::vector<int64_t> sizes;
  std::vector<int> threads{1, 2};
};

inline std::vector<int64_t> parse_list(const char* s) {
  std::vector<int64_t> out;
  for (const char* p = s; *p != '\0';) {
    char* end = nullptr;
    out.push_back(int64_t(std::strtod(p, &end)));
    if (end == p) break;
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

inline Args parse_args(int argc, char** argv, std::vector<int64_t> default_sizes) {
  auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s [--budget SECONDS] [--sizes N,...] [--threads N,...] "
                 "[--clock wall|cpu]\n",
                 argv[0]);
    std::exit(2);
  };
  bool threads_given = false;
  Args a;
  a.sizes = std::move(default_sizes);
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view k = argv[i];
    if (k == "--budget") {
      a.budget = std::strtod(argv[i + 1], nullptr);
    } else if (k == "--sizes") {
      a.sizes = parse_list(argv[i + 1]);
    } else if (k == "--threads") {
      a.threads.clear();
      for (int64_t t : parse_list(argv[i + 1])) a.threads.push_back(int(t));
      threads_given = true;
    } else if (k == "--clock" && (std::string_view(argv[i + 1]) == "wall" ||
                                  std::string_view(argv[i + 1]) == "cpu")) {
      g_clock = std::string_view(argv[i + 1]) == "cpu" ? ClockKind::ThreadCpu : ClockKind::Wall;
    } else {
      usage();
    }
  }
  if ((argc - 1) % 2 != 0) usage();
  if (g_clock == ClockKind::ThreadCpu) {
    if (!threads_given) a.threads = {1};
    std::fprintf(stderr,
                 "%s: timed by the thread's CPU time (--clock cpu): time spent "
                 "descheduled does not count\n",
                 argv[0]);
  }
  return a;
}

/// The sampling budget --budget asks for (the other fields at their defaults).
inline Budget budget_of(const Args& a) {
  Budget b;
  b.seconds = a.budget;
  return b;
}

/// The inputs the C++ benches and their Python peers share (bench/peers.py: weyl): a Weyl
/// sequence in [lo, hi), f32.
inline std::vector<float> weyl(int64_t n, uint64_t salt, double lo = -4.0, double hi = 4.0) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t k = (uint64_t(i) * 2654435761u + salt) % (uint64_t(1) << 32);
    x[std::size_t(i)] = float(lo + (hi - lo) * double(k) / 4294967296.0);
  }
  return x;
}

/// Prints a peer's largest distance from an f64 reference; false (and a FAILED line) above
/// 1e-4.
inline bool check(const std::string& what, const std::vector<float>& y,
                  const std::vector<double>& ref) {
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - ref[i]));
  std::printf("check %s: max|y-f64 ref| = %.3g\n", what.c_str(), worst);
  if (worst <= 1e-4) return true;
  std::printf("FAILED: %s is off by more than 1e-4\n", what.c_str());
  return false;
}

/// rlx's row of a workload: runs `exe` on `leaves` once, checks its first output (as f32)
/// against `ref` (see check), then times Executable::run (allocating and returning the
/// outputs). Stats of the timing, or nothing when the check failed. Templated so this header
/// needs no rlx header.
template <class Exe, class Leaves>
inline std::optional<Stats>
check_and_time_run(const Exe& exe, const Leaves& leaves, const std::string& what,
                   const std::vector<double>& ref, const Budget& budget) {
  auto out = exe.run(leaves);
  std::vector<float> y(ref.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = float(out[0].get_f64(int64_t(i)));
  if (!check(what, y, ref)) return std::nullopt;
  return measure(
      [&] {
        auto r = exe.run(leaves);
        clobber(r[0].bytes().data());
      },
      budget);
}

} // namespace bench
