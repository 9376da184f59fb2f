// jit/thread_pool.hpp -- the one thread pool every compiled kernel runs on.
#pragma once

#include <cstdint>
#include <functional>

namespace rlx::threads {

/// Run fn(begin, end) over [0, n) in chunks of at least `grain` elements on at most
/// rlx::num_threads() threads (the caller is one of them); returns when every chunk is done.
/// The first exception thrown by fn is rethrown here. When the pool is busy with another
/// caller's work, this call runs serially on its own thread, so the process never runs more
/// kernel threads than configured.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

/// Physical cores of this machine (logical CPUs when the topology cannot be read).
int physical_cores();

} // namespace rlx::threads
