// tests/support/backends.hpp -- running a Tensor test body on each backend, and loading a
// fixture case's .npy files: the helpers every frontend suite shares.
#pragma once

#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <string>
#include <utility>

namespace rlx::test {

/// Runs body once per backend (the default backend decides where Tensor code computes), and
/// restores the default afterwards, also when body throws.
template <class F> void on_both_backends(F&& body) {
  struct Restore {
    Backend saved = default_backend();
    ~Restore() { set_default_backend(saved); }
  } restore;
  for (Backend b : {Backend::Interp, Backend::Jit}) {
    CAPTURE(b);
    set_default_backend(b);
    body();
  }
}

/// The folder of one fixture case: Fixture("fft", "rfft_odd")("want") loads
/// tests/fixtures/fft/rfft_odd/want.npy.
struct Fixture {
  std::string dir;
  Fixture(const std::string& set, const std::string& name)
      : dir(std::string(RLX_SOURCE_DIR) + "/tests/fixtures/" + set + "/" + name + "/") {}
  Tensor operator()(const std::string& file) const { return load_npy(dir + file + ".npy"); }
};

} // namespace rlx::test
