// tests/test_light_header.cpp -- <rlx/rlx.hpp>, the everyday umbrella, is enough for Tensor code
// (ops, jit, grad, settings) and parses none of the IR's internals: ir::Graph stays a forward
// declaration and the attribute variant (rlx/ir/attrs.hpp) is not included. This file must
// include nothing else of rlx (issue 22: a Tensor file compiles in about an Eigen hello-world's
// time; bench/compile_time.sh).
#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <vector>

namespace {

template <class T>
concept Complete = requires { sizeof(T); };

} // namespace

// Checked where the umbrella alone is included: were either complete, rlx.hpp would again parse
// the Graph API or the attribute structs and AnyAttrs (the 3.4 s the issue measured). Bytes is
// defined only by rlx/ir/attrs.hpp; declaring it here is harmless either way.
namespace rlx::ir {
struct Bytes;
}
static_assert(!Complete<rlx::ir::Graph>, "rlx/rlx.hpp must not define ir::Graph");
static_assert(!Complete<rlx::ir::Bytes>, "rlx/rlx.hpp must not include rlx/ir/attrs.hpp");

TEST_CASE("light header: Tensor ops, jit, grad and settings work with rlx/rlx.hpp alone") {
  rlx::Tensor x = rlx::arange(0, 6, 1).reshape({2, 3});
  CHECK(x.sum().item<float>() == 15.f);
  CHECK(rlx::pad(x, {0, 0, 1, 0}, rlx::ir::PadMode::Edge).sizes() == rlx::Dims{2, 4});
  auto f = rlx::jit([](rlx::Tensor t) { return t * 2 + 1; });
  CHECK(f(x).to_vector<float>() == std::vector<float>{1, 3, 5, 7, 9, 11});
  auto dsq = rlx::grad([](rlx::Tensor t) { return (t * t).sum(); });
  CHECK(dsq(x).to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10});
  CHECK(rlx::backend_available(rlx::default_backend()));
  CHECK(rlx::cache_stats().runs > 0);
}
