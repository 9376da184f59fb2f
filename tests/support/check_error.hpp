// tests/support/check_error.hpp -- assert that code throws rlx::Error of a kind with a message.
#pragma once

#include <rlx/error.hpp>

#include <doctest/doctest.h>

#include <string>

namespace rlx::test {

/// Runs f; CHECKs that it throws rlx::Error of `kind` whose message contains `needle`.
/// Returns the message (empty when nothing or something else was thrown).
template <class F> std::string check_error(F&& f, ErrorKind kind, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(e.kind() == kind);
    CHECK(msg.find(needle) != std::string::npos);
    return msg;
  } catch (const std::exception& e) {
    FAIL("threw something other than rlx::Error: " << e.what());
    return "";
  }
  FAIL("did not throw; expected an rlx::Error containing: " << needle);
  return "";
}

} // namespace rlx::test
