// src/frontend/host.cpp -- recovering the frontend's state after a host abandoned frames.
#include "rlx/host.hpp"

namespace rlx {

// TODO(rec): release the lock of a jitted function whose trace was abandoned and reset the
// thread's trace stack.
void frames_abandoned() noexcept {}

} // namespace rlx
