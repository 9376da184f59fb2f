// tests/test_nn_functional.cpp -- rlx::nn's functional layers (src/frontend/nn_functional.cpp)
// against torch.nn.functional (tests/fixtures/nn_functional/, written by
// tests/fixtures/make_nn_functional.py, whose p_*.npy files carry each case's options) on both
// backends: outputs, max-pooling indices, updated running statistics, and the gradients of
// sum(output * gy) in every differentiable input, in f64. Then one test per kind of misuse.
#include "support/backends.hpp"
#include "support/check_error.hpp"
#include "support/compare.hpp"

#include <rlx/nn.hpp>
#include <rlx/rlx.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {

using rlx::Dims;
using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::Fixture;
using rlx::test::on_both_backends;
namespace nn = rlx::nn;

const std::string kSet = "nn_functional";

/// The fixture cases whose folder name starts with `prefix`, sorted.
std::vector<std::string> cases(const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(RLX_SOURCE_DIR) +
                                                           "/tests/fixtures/" + kSet)) {
    std::string name = e.path().filename().string();
    if (e.is_directory() && name.starts_with(prefix)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool has(const Fixture& fx, const std::string& file) {
  return std::filesystem::exists(fx.dir + file + ".npy");
}

Dims ints(const Tensor& t) { return t.to_vector<int64_t>(); }
int64_t int_of(const Tensor& t) { return ints(t).at(0); }
double real_of(const Tensor& t) { return t.to_vector<double>().at(0); }

/// got has want's sizes and dtype; integers equal exactly, floats within 1e-9 (1 + |want|).
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  rlx::test::check_close(got, want, {1e-9, 1e-9}, what);
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

/// f(inputs) equals want, and the gradient of sum(f * gy) in each input equals d<name>.
void check_case(const Fixture& fx, const std::vector<std::string>& names, const Fn& f) {
  std::vector<Tensor> in;
  for (const auto& n : names) in.push_back(fx(n));
  expect_close(f(in), fx("want"), "value");
  Tensor gy = fx("gy");
  std::vector<int> argnums;
  for (std::size_t i = 0; i < in.size(); ++i) argnums.push_back(int(i));
  // rlx::grad takes Tensors as arguments; up to three inputs here.
  std::vector<Tensor> d;
  if (in.size() == 1) {
    d.push_back(rlx::grad([&](Tensor a) { return (f({a}) * gy).sum(); })(in[0]));
  } else if (in.size() == 2) {
    auto r =
        rlx::grad([&](Tensor a, Tensor b) { return (f({a, b}) * gy).sum(); }, {0, 1})(in[0], in[1]);
    d.assign(r.begin(), r.end());
  } else {
    REQUIRE(in.size() == 3);
    auto r = rlx::grad([&](Tensor a, Tensor b, Tensor c) { return (f({a, b, c}) * gy).sum(); },
                       {0, 1, 2})(in[0], in[1], in[2]);
    d.assign(r.begin(), r.end());
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    expect_close(d[i], fx("d" + names[i]), "d" + names[i]);
}

/// Inputs present in the case, of the candidates, in order.
std::vector<std::string> present(const Fixture& fx, std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (const char* n : names)
    if (has(fx, n)) out.push_back(n);
  return out;
}

/// A norm taking x and, when the case has them, weight and bias.
using AffineNorm =
    std::function<Tensor(const Tensor&, std::optional<Tensor>, std::optional<Tensor>)>;

/// The `count` cases named prefix*: the norm norm_of(case) gives (with the case's options), its
/// output and its gradients in x, w, b.
void check_affine_norm_cases(const std::string& prefix, std::size_t count,
                             const std::function<AffineNorm(const Fixture&)>& norm_of) {
  auto names = cases(prefix);
  CHECK(names.size() == count);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    AffineNorm norm = norm_of(fx);
    bool affine = has(fx, "w");
    on_both_backends([&] {
      check_case(fx, present(fx, {"x", "w", "b"}), [&](const std::vector<Tensor>& in) {
        return affine ? norm(in[0], in[1], in[2]) : norm(in[0], std::nullopt, std::nullopt);
      });
    });
  }
}

/// A norm's output and its gradients in x, w, b (check_case), then, when the case has running
/// statistics, their updated values.
void check_norm_case(const Fixture& fx, bool running,
                     const std::function<nn::NormResult(const std::vector<Tensor>&)>& run) {
  on_both_backends([&] {
    check_case(fx, present(fx, {"x", "w", "b"}),
               [&](const std::vector<Tensor>& in) { return run(in).y; });
    std::vector<Tensor> in;
    for (const auto& n : present(fx, {"x", "w", "b"})) in.push_back(fx(n));
    nn::NormResult r = run(in);
    REQUIRE(r.running_mean.has_value() == running);
    REQUIRE(r.running_var.has_value() == running);
    if (running) {
      expect_close(*r.running_mean, fx("want_rm"), "running_mean");
      expect_close(*r.running_var, fx("want_rv"), "running_var");
    }
  });
}

} // namespace

TEST_CASE("conv1d, conv2d and conv3d match torch with stride, dilation, groups, same/valid and "
          "per-side padding, and their gradients") {
  auto names = cases("conv_");
  CHECK(names.size() == 11);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    nn::ConvOptions o;
    o.stride = ints(fx("p_stride"));
    o.dilation = ints(fx("p_dilation"));
    o.groups = int_of(fx("p_groups"));
    int64_t mode = int_of(fx("p_mode"));
    if (mode == 1)
      o.padding = "same";
    else if (mode == 2)
      o.padding = "valid";
    else {
      o.padding.before = ints(fx("p_pad_before"));
      o.padding.after = ints(fx("p_pad_after"));
    }
    auto sp = std::size_t(fx("x").ndim() - 2);
    auto conv = sp == 1 ? nn::conv1d : sp == 2 ? nn::conv2d : nn::conv3d;
    bool bias = has(fx, "b");
    on_both_backends([&] {
      check_case(fx, present(fx, {"x", "w", "b"}), [&](const std::vector<Tensor>& in) {
        return conv(in[0], in[1], bias ? std::optional<Tensor>(in[2]) : std::nullopt, o,
                    rlx::Loc::current());
      });
    });
  }
}

TEST_CASE("conv padding spelled as an int, one per axis or per-side pairs agrees, and an unbatched "
          "input gives the batched result's sample") {
  Fixture fx(kSet, "conv_2d_basic"); // padding 1 on both sides of both axes
  Tensor x = fx("x"), w = fx("w"), b = fx("b"), want = fx("want");
  on_both_backends([&] {
    for (const nn::ConvPadding& p :
         {nn::ConvPadding(1), nn::ConvPadding{1, 1}, nn::ConvPadding::sides({{1, 1}, {1, 1}})})
      expect_close(nn::conv2d(x, w, b, {.padding = p}), want, "padding");
    Tensor x1 = rlx::narrow(x, 0, 1, 1).squeeze(0), want1 = rlx::narrow(want, 0, 1, 1).squeeze(0);
    expect_close(nn::conv2d(x1, w, b, {.padding = 1}), want1, "unbatched");
  });
}

TEST_CASE("conv_transpose1d/2d/3d match torch with output_padding, dilation, groups and bias, "
          "and their gradients") {
  auto names = cases("convt_");
  CHECK(names.size() == 3);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    nn::ConvTransposeOptions o{ints(fx("p_stride")), ints(fx("p_padding")),
                               ints(fx("p_output_padding")), int_of(fx("p_groups")),
                               ints(fx("p_dilation"))};
    auto sp = std::size_t(fx("x").ndim() - 2);
    auto conv = sp == 1   ? nn::conv_transpose1d
                : sp == 2 ? nn::conv_transpose2d
                          : nn::conv_transpose3d;
    bool bias = has(fx, "b");
    on_both_backends([&] {
      check_case(fx, present(fx, {"x", "w", "b"}), [&](const std::vector<Tensor>& in) {
        return conv(in[0], in[1], bias ? std::optional<Tensor>(in[2]) : std::nullopt, o,
                    rlx::Loc::current());
      });
    });
  }
}

namespace {
nn::PoolOptions pool_options(const Fixture& fx) {
  nn::PoolOptions o;
  if (has(fx, "p_stride")) o.stride = ints(fx("p_stride"));
  o.padding = ints(fx("p_padding"));
  o.dilation = ints(fx("p_dilation"));
  o.ceil_mode = int_of(fx("p_ceil")) != 0;
  o.count_include_pad = int_of(fx("p_count_include_pad")) != 0;
  if (int64_t d = int_of(fx("p_divisor"))) o.divisor_override = d;
  return o;
}
} // namespace

TEST_CASE("max pooling matches torch with dilation, padding and ceil_mode, with torch's flat "
          "indices and gradients") {
  auto names = cases("maxpool_");
  CHECK(names.size() == 6);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    nn::PoolOptions o = pool_options(fx);
    Dims k = ints(fx("p_kernel"));
    int64_t sp = int_of(fx("p_sp"));
    auto pool = sp == 1 ? nn::max_pool1d : sp == 2 ? nn::max_pool2d : nn::max_pool3d;
    auto with_idx = sp == 1   ? nn::max_pool1d_with_indices
                    : sp == 2 ? nn::max_pool2d_with_indices
                              : nn::max_pool3d_with_indices;
    on_both_backends([&] {
      check_case(fx, {"x"}, [&](const std::vector<Tensor>& in) {
        return pool(in[0], k, o, rlx::Loc::current());
      });
      nn::PoolWithIndices r = with_idx(fx("x"), k, o, rlx::Loc::current());
      expect_close(r.values, fx("want"), "values");
      expect_close(r.indices, fx("want_idx"), "indices");
    });
  }
}

TEST_CASE("average pooling matches torch with count_include_pad, divisor_override and ceil_mode's "
          "partial windows, and its gradients") {
  auto names = cases("avgpool_");
  CHECK(names.size() == 6);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    nn::PoolOptions o = pool_options(fx);
    Dims k = ints(fx("p_kernel"));
    int64_t sp = int_of(fx("p_sp"));
    auto pool = sp == 1 ? nn::avg_pool1d : sp == 2 ? nn::avg_pool2d : nn::avg_pool3d;
    on_both_backends([&] {
      check_case(fx, {"x"}, [&](const std::vector<Tensor>& in) {
        return pool(in[0], k, o, rlx::Loc::current());
      });
    });
  }
}

TEST_CASE("adaptive average and max pooling match torch on uneven and overlapping cells, with "
          "torch's indices for max") {
  auto names = cases("adaptive_");
  CHECK(names.size() == 4);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    Dims out = ints(fx("p_out"));
    bool is_max = int_of(fx("p_max")) != 0;
    int64_t sp = int_of(fx("p_sp"));
    on_both_backends([&] {
      check_case(fx, {"x"}, [&](const std::vector<Tensor>& in) {
        if (sp == 1)
          return is_max ? nn::adaptive_max_pool1d(in[0], out[0])
                        : nn::adaptive_avg_pool1d(in[0], out[0]);
        return is_max ? nn::adaptive_max_pool2d(in[0], out) : nn::adaptive_avg_pool2d(in[0], out);
      });
      if (!is_max) return;
      nn::PoolWithIndices r = sp == 1 ? nn::adaptive_max_pool1d_with_indices(fx("x"), out[0])
                                      : nn::adaptive_max_pool2d_with_indices(fx("x"), out);
      expect_close(r.values, fx("want"), "values");
      expect_close(r.indices, fx("want_idx"), "indices");
    });
  }
}

TEST_CASE("batch_norm matches torch in training (batch statistics, running averages with the "
          "unbiased variance) and inference, with gradients") {
  auto names = cases("batchnorm_");
  CHECK(names.size() == 3);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    bool running = has(fx, "rm"), affine = has(fx, "w");
    auto opts = [&](const std::vector<Tensor>& in) {
      nn::BatchNormOptions o{.training = int_of(fx("p_training")) != 0,
                             .momentum = real_of(fx("p_momentum")),
                             .eps = real_of(fx("p_eps"))};
      if (affine) {
        o.weight = in[1];
        o.bias = in[2];
      }
      return o;
    };
    auto run = [&](const std::vector<Tensor>& in) {
      return nn::batch_norm(in[0], running ? std::optional<Tensor>(fx("rm")) : std::nullopt,
                            running ? std::optional<Tensor>(fx("rv")) : std::nullopt, opts(in));
    };
    check_norm_case(fx, running, run);
  }
}

TEST_CASE("instance_norm matches torch with and without affine, running averages and "
          "use_input_stats, with gradients") {
  auto names = cases("instnorm_");
  CHECK(names.size() == 3);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    bool running = has(fx, "rm"), affine = has(fx, "w");
    auto run = [&](const std::vector<Tensor>& in) {
      nn::InstanceNormOptions o{.use_input_stats = int_of(fx("p_use_input_stats")) != 0,
                                .momentum = real_of(fx("p_momentum")),
                                .eps = real_of(fx("p_eps"))};
      if (running) {
        o.running_mean = fx("rm");
        o.running_var = fx("rv");
      }
      if (affine) {
        o.weight = in[1];
        o.bias = in[2];
      }
      return nn::instance_norm(in[0], o);
    };
    check_norm_case(fx, running, run);
  }
}

TEST_CASE("layer_norm over one, two and three trailing axes and group_norm match torch, with "
          "gradients") {
  check_affine_norm_cases("layernorm_", 3, [](const Fixture& fx) -> AffineNorm {
    Dims shape = ints(fx("p_shape"));
    double eps = real_of(fx("p_eps"));
    return [=](const Tensor& x, std::optional<Tensor> w, std::optional<Tensor> b) {
      return nn::layer_norm(x, shape, w, b, eps);
    };
  });
  check_affine_norm_cases("groupnorm_", 2, [](const Fixture& fx) -> AffineNorm {
    int64_t groups = int_of(fx("p_groups"));
    double eps = real_of(fx("p_eps"));
    return [=](const Tensor& x, std::optional<Tensor> w, std::optional<Tensor> b) {
      return nn::group_norm(x, groups, w, b, eps);
    };
  });
}

TEST_CASE("scaled_dot_product_attention matches torch's definition with grouped-query heads, a "
          "value size apart from E, bool and float masks, a bias and is_causal") {
  auto names = cases("sdpa_");
  CHECK(names.size() == 5);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    nn::SdpaOptions o{.is_causal = int_of(fx("p_causal")) != 0, .enable_gqa = true};
    if (has(fx, "mask")) o.attn_mask = fx("mask");
    if (has(fx, "bias")) o.bias = fx("bias");
    if (double s = real_of(fx("p_scale")); !std::isnan(s)) o.scale = s;
    on_both_backends([&] {
      check_case(fx, {"q", "k", "v"}, [&](const std::vector<Tensor>& in) {
        return nn::scaled_dot_product_attention(in[0], in[1], in[2], o);
      });
    });
  }
}

TEST_CASE("multi_head_attention_forward matches torch with biases, bool and float masks and "
          "per-head or averaged weights, with gradients") {
  auto names = cases("mha_");
  CHECK(names.size() == 3);
  for (const auto& name : names) {
    CAPTURE(name);
    Fixture fx(kSet, name);
    int64_t heads = int_of(fx("p_heads"));
    nn::MultiHeadAttentionOptions o{.average_attn_weights = int_of(fx("p_average")) != 0};
    if (has(fx, "in_b")) o.in_proj_bias = fx("in_b");
    if (has(fx, "out_b")) o.out_proj_bias = fx("out_b");
    if (has(fx, "kpm")) o.key_padding_mask = fx("kpm");
    if (has(fx, "attn")) o.attn_mask = fx("attn");
    Tensor in_w = fx("in_w"), out_w = fx("out_w");
    auto run = [&](const std::vector<Tensor>& in, const nn::MultiHeadAttentionOptions& opts) {
      return nn::multi_head_attention_forward(in[0], in[1], in[2], heads, in_w, out_w, opts);
    };
    on_both_backends([&] {
      check_case(fx, {"q", "k", "v"},
                 [&](const std::vector<Tensor>& in) { return run(in, o).output; });
      nn::MultiHeadAttentionResult r = run({fx("q"), fx("k"), fx("v")}, o);
      REQUIRE(r.weights.has_value());
      expect_close(*r.weights, fx("want_weights"), "weights");
      if (has(fx, "kpm")) {
        // A float key_padding_mask is added: -inf where the bool one leaves a key out.
        nn::MultiHeadAttentionOptions f = o;
        f.key_padding_mask = rlx::where(fx("kpm"), -INFINITY, rlx::zeros({1}, DType::F64));
        f.need_weights = false;
        nn::MultiHeadAttentionResult rf = run({fx("q"), fx("k"), fx("v")}, f);
        CHECK_FALSE(rf.weights.has_value());
        expect_close(rf.output, fx("want"), "float key_padding_mask");
      }
    });
  }
}

TEST_CASE("the functional layers trace inside rlx::jit") {
  Fixture fx(kSet, "maxpool_2d_options");
  Tensor x = fx("x");
  nn::PoolOptions o = pool_options(fx);
  Dims k = ints(fx("p_kernel"));
  auto f = rlx::jit([&](Tensor t) { return nn::max_pool2d(t, k, o); });
  expect_close(f(x), fx("want"), "jit max_pool2d");
}

TEST_CASE("functional layers refuse bad shapes and options naming the function, the shapes and "
          "the caller's line") {
  Tensor x = rlx::ones({2, 4, 6, 6}), w = rlx::ones({3, 4, 3, 3});
  // Convolutions.
  std::string msg = check_error([&] { (void)nn::conv2d(x, rlx::ones({3, 4, 3})); },
                                ErrorKind::Shape, "conv2d: weight must be [C_out");
  CHECK(msg.find("f32[3,4,3]") != std::string::npos);
  CHECK(msg.find("test_nn_functional.cpp") != std::string::npos);
  check_error([&] { (void)nn::conv2d(x, w, std::nullopt, {.groups = 2}); }, ErrorKind::Shape,
              "conv2d: input f32[2,4,6,6] and weight f32[3,4,3,3] do not fit groups=2");
  check_error([&] { (void)nn::conv2d(x, w, std::nullopt, {.stride = {2}, .padding = "same"}); },
              ErrorKind::Value, "conv2d: padding=\"same\" needs stride 1");
  check_error([&] { (void)nn::conv2d(x, w, std::nullopt, {.padding = "full"}); }, ErrorKind::Value,
              "padding must be \"same\" or \"valid\"");
  check_error([&] { (void)nn::conv2d(x, w, std::nullopt, {.stride = {1, 2, 3}}); },
              ErrorKind::Value, "conv2d: stride [1,2,3] needs 1 or 2 values");
  check_error([&] { (void)nn::conv1d(rlx::ones({1, 4, 2}), rlx::ones({3, 4, 5})); },
              ErrorKind::Shape, "smaller than the dilated kernel");
  check_error([&] { (void)nn::conv2d(x, w, rlx::ones({4})); }, ErrorKind::Shape,
              "conv2d: bias must be [3]");
  check_error([&] { (void)nn::conv3d(rlx::ones({2, 4, 6}), w); }, ErrorKind::Shape,
              "conv3d: input must be [N, C, 3 spatial axes]");
  check_error(
      [&] {
        (void)nn::conv_transpose2d(x, rlx::ones({4, 2, 3, 3}), std::nullopt,
                                   {.stride = {2}, .output_padding = {2}});
      },
      ErrorKind::Value, "conv_transpose2d: output_padding [2,2] must be smaller than stride [2,2]");
  // Pooling.
  check_error([&] { (void)nn::max_pool2d(x, {2}, {.padding = {2}}); }, ErrorKind::Value,
              "max_pool2d: padding [2,2] must be at most half of kernel_size [2,2]");
  check_error([&] { (void)nn::avg_pool2d(x, {2}, {.dilation = {2}}); }, ErrorKind::Value,
              "avg_pool2d: average pooling has no dilation");
  check_error([&] { (void)nn::max_pool1d(rlx::ones({1, 2, 3}), {5}); }, ErrorKind::Shape,
              "max_pool1d: input f32[1,2,3] is too small for kernel [5]");
  check_error([&] { (void)nn::avg_pool1d(rlx::ones({1, 2, 3}), {2}, {.divisor_override = 0}); },
              ErrorKind::Value, "divisor_override 0 must not be zero");
  check_error([&] { (void)nn::adaptive_avg_pool2d(x, {0, 2}); }, ErrorKind::Value,
              "adaptive_avg_pool2d: output_size must be positive");
  // Norms.
  check_error(
      [&] {
        (void)nn::batch_norm(rlx::ones({1, 3}), std::nullopt, std::nullopt, {.training = true});
      },
      ErrorKind::Shape, "batch_norm: training needs more than 1 value per channel");
  check_error([&] { (void)nn::batch_norm(x, std::nullopt, std::nullopt); }, ErrorKind::Value,
              "batch_norm: inference (training = false) needs running_mean");
  check_error([&] { (void)nn::batch_norm(x, rlx::zeros({3}), rlx::ones({3})); }, ErrorKind::Shape,
              "batch_norm: running_mean must be [4]");
  check_error([&] { (void)nn::instance_norm(x, {.use_input_stats = false}); }, ErrorKind::Value,
              "instance_norm: use_input_stats = false needs running_mean");
  check_error(
      [&] { (void)nn::layer_norm(x, {5, 6}); }, ErrorKind::Shape,
      "layer_norm: normalized_shape [5,6] must be the trailing sizes of input f32[2,4,6,6]");
  check_error([&] { (void)nn::layer_norm(x, {6}, rlx::ones({5})); }, ErrorKind::Shape,
              "layer_norm: weight f32[5] must have normalized_shape [6]");
  check_error([&] { (void)nn::group_norm(x, 3); }, ErrorKind::Shape,
              "group_norm: 4 channels of input f32[2,4,6,6] do not split into num_groups=3");
  // Attention.
  Tensor q = rlx::ones({2, 4, 3, 8}), kv = rlx::ones({2, 2, 5, 8});
  check_error([&] { (void)nn::scaled_dot_product_attention(q, kv, kv); }, ErrorKind::Shape,
              "scaled_dot_product_attention: q has 4 heads and k/v 2: set enable_gqa");
  check_error([&] { (void)nn::scaled_dot_product_attention(q, q, q, {.dropout_p = 0.1}); },
              ErrorKind::Unsupported, "scaled_dot_product_attention: dropout_p must be 0");
  check_error([&] { (void)nn::scaled_dot_product_attention(q, rlx::ones({2, 4, 5, 6}), q); },
              ErrorKind::Shape, "q and k must share E");
  check_error(
      [&] { (void)nn::scaled_dot_product_attention(q, q, q, {.attn_mask = rlx::ones({2, 3, 3})}); },
      ErrorKind::Shape, "attn_mask f32[2,3,3] does not broadcast to the scores [2,4,3,3]");
  check_error(
      [&] {
        (void)nn::scaled_dot_product_attention(q, rlx::ones({2, 3, 3, 8}), rlx::ones({2, 3, 3, 8}),
                                               {.enable_gqa = true});
      },
      ErrorKind::Shape, "the same number of heads, dividing q's");
  Tensor seq = rlx::ones({4, 2, 6});
  check_error(
      [&] {
        (void)nn::multi_head_attention_forward(seq, seq, seq, 4, rlx::ones({18, 6}),
                                               rlx::ones({6, 6}));
      },
      ErrorKind::Shape,
      "multi_head_attention_forward: embed dim 6 does not split into "
      "num_heads=4");
  check_error(
      [&] {
        (void)nn::multi_head_attention_forward(seq, seq, seq, 2, rlx::ones({6, 6}),
                                               rlx::ones({6, 6}));
      },
      ErrorKind::Shape, "in_proj_weight f32[6,6] must be [18, 6]");
  check_error(
      [&] {
        (void)nn::multi_head_attention_forward(seq, seq, seq, 2, rlx::ones({18, 6}),
                                               rlx::ones({6, 6}),
                                               {.key_padding_mask = rlx::ones({4, 2})});
      },
      ErrorKind::Shape, "key_padding_mask f32[4,2] must be [2, 4]");
}
