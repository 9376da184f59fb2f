// tools/repl/crash_guard.hpp -- survive a cell whose code crashes (a null pointer, a stack
// overflow): the signal jumps back to the session instead of ending the process.
#pragma once

#include <functional>

namespace rlx::repl {

/// Run `body`. A SIGSEGV, SIGBUS, SIGFPE or SIGILL raised while it runs (on an alternate stack,
/// so that a stack overflow is caught too) abandons it and returns the signal; 0 when it
/// returned. C++ exceptions pass through. Best effort: the abandoned frames are not unwound, so
/// what they were changing (and any lock they held) stays as it was.
int run_guarded(const std::function<void()>& body);

} // namespace rlx::repl
