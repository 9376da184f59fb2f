// bench/bench_splat.cpp -- 3-D Gaussian splatting: 100k random Gaussians (degree-1 colour) at
// 512x512 in 16-pixel tiles, the forward render and the backward (rlx::grad of a loss on the
// image, which runs the forward's prepare again and the analytic backward), on 1 and 2 threads
// through the JIT (tiles and Gaussians on its thread pool). The numpy reference renderer
// (tests/fixtures/make_splat.py, a loop per pixel) is bench/peers_splat.py, timed at a smaller
// size and scaled; --sizes N sets the number of Gaussians.
#include "bench_util.hpp"

#include <rlx/rlx.hpp>

#include <cstdint>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {100000});
  const bench::Budget budget = bench::budget_of(args);
  rlx::set_default_backend(rlx::Backend::Jit);
  rlx::splat::Camera cam;
  cam.width = 512;
  cam.height = 512;
  cam.background = {0.1f, 0.1f, 0.1f};
  for (int64_t n : args.sizes) {
    // A slab of Gaussians in front of the camera, about 2 to 6 pixels across each.
    rlx::splat::Scene s{
        rlx::concat(
            {(rlx::rand({n, 2}, 1) * 2.0f - 1.0f) * 2.5f, rlx::rand({n, 1}, 2) * 4.0f + 4.0f}, 1),
        rlx::rand({n, 3}, 3) * 1.0f - 4.5f,
        rlx::randn({n, 4}, 4),
        rlx::randn({n}, 5),
        rlx::randn({n, 3}, 6) * 0.5f,
        rlx::randn({n, 3, 3}, 7) * 0.1f};
    rlx::eval(s.means, s.log_scales, s.rotations, s.opacity_logits, s.colors_dc, s.sh_rest);
    rlx::Tensor d = rlx::randn({512, 512, 4}, 8);
    auto fwd = rlx::jit([&](const rlx::splat::Scene& q) { return rlx::splat::render(q, cam); });
    auto bwd = rlx::jit([&](const rlx::splat::Scene& q, const rlx::Tensor& dd) {
      return rlx::grad(
          [&](const rlx::splat::Scene& r) { return rlx::sum(rlx::splat::render(r, cam) * dd); })(q);
    });
    for (int threads : args.threads) {
      rlx::set_num_threads(threads);
      bench::Stats f = bench::measure([&] { rlx::eval(fwd(s)); }, budget);
      bench::emit_time({"splat 512x512 forward", "rlx", threads, n, true}, f);
      bench::Stats b = bench::measure(
          [&] {
            rlx::splat::Scene g = bwd(s, d);
            rlx::eval(g.means, g.log_scales, g.rotations, g.opacity_logits, g.colors_dc, g.sh_rest);
          },
          budget);
      bench::emit_time({"splat 512x512 backward", "rlx", threads, n, true}, b);
    }
  }
  return 0;
}
