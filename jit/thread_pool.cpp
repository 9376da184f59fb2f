// jit/thread_pool.cpp -- a small fork-join pool: workers wait for a job, take chunks
// from an atomic counter, and the caller joins in. Waiting spins for a short while (kSpin)
// before it sleeps on a condition variable: a plan's parallel steps come back to back, and a
// sleeping thread woken through the kernel costs tens of microseconds on a VM (a decode step of
// 0.5 ms on two threads ran at one thread's speed in half the runs), while an idle pool sleeps.
#include "thread_pool.hpp"

#include "rlx/host.hpp"
#include "rlx/runtime.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace rlx {

namespace threads {

int physical_cores() {
  // Distinct (physical id, core id) pairs of /proc/cpuinfo.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<int, int>> cores;
  std::string line;
  int physical = 0;
  while (std::getline(in, line)) {
    auto value = [&] { return std::atoi(line.substr(line.find(':') + 1).c_str()); };
    if (line.rfind("physical id", 0) == 0) physical = value();
    if (line.rfind("core id", 0) == 0) cores.insert({physical, value()});
  }
  int logical = int(std::max(1u, std::thread::hardware_concurrency()));
  return cores.empty() ? logical : std::min(logical, int(cores.size()));
}

namespace {

/// Whether this thread waits for a job of the pool's: the job's chunks run on other threads and
/// read its frames (abandon_is_safe). Read by signal handlers.
thread_local volatile std::sig_atomic_t t_in_job = 0;

/// How long a worker waiting for a job, or a caller waiting for the workers, spins before it
/// sleeps (OpenMP runtimes spin for a similar while by default).
constexpr std::chrono::microseconds kSpin{200};
/// A job is cut into up to this many chunks per thread, taken from a shared counter, so a thread
/// that runs late (a VM's vCPU descheduled by its host) leaves its share to the others instead of
/// holding the job: with one chunk per thread a 2-thread decode step ran at 1-thread speed in
/// half the runs. Kernels write disjoint ranges, so the split does not change any result.
constexpr int64_t kChunksPerThread = 4;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Spins until ready() or kSpin passed; true when ready.
template <class F> bool spin_until(F&& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

class Pool {
public:
  explicit Pool(int threads) { resize(threads); }
  ~Pool() { stop(); }

  int threads() const { return threads_; }

  void resize(int threads) {
    std::lock_guard run(run_mu_); // no job in flight while the workers change
    stop();
    threads_ = threads;
    quit_ = false;
    quit_flag_.store(false);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    std::unique_lock run(run_mu_, std::try_to_lock);
    int64_t chunks = std::min<int64_t>(threads_ * kChunksPerThread,
                                       (n + grain - 1) / std::max<int64_t>(grain, 1));
    if (!run.owns_lock() || chunks <= 1) { // busy with another caller, or too small to split
      fn(0, n);
      return;
    }
    struct InJob {
      InJob() { t_in_job = 1; }
      ~InJob() { t_in_job = 0; }
    } in_job;
    {
      std::lock_guard lock(mu_);
      fn_ = &fn;
      n_ = n;
      chunks_ = chunks;
      next_.store(0);
      stop_.store(false);
      done_.store(0);
      error_ = nullptr;
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    take_chunks();
    spin_until([&] { return done_.load() == chunks_; });
    std::unique_lock lock(mu_);
    finished_.wait(lock, [&] { return done_.load() == chunks_; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

private:
  void take_chunks() {
    for (;;) {
      int64_t c = next_.fetch_add(1);
      if (c >= chunks_) return;
      int64_t begin = n_ * c / chunks_, end = n_ * (c + 1) / chunks_;
      std::exception_ptr err;
      try {
        // A safe point per chunk: after an interrupt request the job's chunks are skipped.
        if (!stop_.load() && interrupt_requested()) {
          stop_.store(true);
          detail::check_interrupt("a parallel step");
        }
        if (!stop_.load()) (*fn_)(begin, end);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard lock(mu_);
      if (err && !error_) error_ = err;
      if (done_.fetch_add(1) + 1 == chunks_) finished_.notify_all();
    }
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load() != seen || quit_flag_.load(); });
      {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [&] { return quit_ || (generation_.load() != seen && fn_ != nullptr); });
        if (quit_) return;
        seen = generation_.load();
      }
      take_chunks();
    }
  }

  void stop() {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
      quit_flag_.store(true);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::mutex run_mu_; // one job at a time
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  int threads_ = 1;
  bool quit_ = false;
  std::atomic<bool> quit_flag_{false}; ///< quit_, readable while spinning without mu_
  std::atomic<uint64_t> generation_{0};
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunks_ = 0;
  std::atomic<int64_t> done_{0};
  std::atomic<int64_t> next_{0};
  std::atomic<bool> stop_{false}; ///< an interrupt was seen: the remaining chunks are skipped
  std::exception_ptr error_;
};

int initial_threads() {
  const char* env = std::getenv("RLX_NUM_THREADS");
  if (env == nullptr || *env == '\0') return physical_cores();
  char* end = nullptr;
  long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 1 || v > 1024)
    fail(ErrorKind::Value, "RLX_NUM_THREADS=", env, ": expected a number of threads in [1, 1024]");
  return int(v);
}

Pool& pool() {
  static Pool* p = new Pool(initial_threads()); // never destroyed: kernels may run at exit
  return *p;
}

} // namespace

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  pool().run(n, grain, fn);
}

} // namespace threads

int num_threads() { return threads::pool().threads(); }

bool abandon_is_safe() noexcept { return threads::t_in_job == 0 && detail::work_allows_abandon(); }

void set_num_threads(int n) {
  if (n < 1 || n > 1024)
    fail(ErrorKind::Value, "set_num_threads: expected a number of threads in [1, 1024], got ", n);
  threads::pool().resize(n);
}

} // namespace rlx
