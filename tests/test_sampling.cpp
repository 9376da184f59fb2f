// tests/test_sampling.cpp -- rlx::sample (include/rlx/sampling.hpp, RLX's Graph::sample): the ids'
// distribution against a numpy transcription of HF transformers' warpers
// (tests/fixtures/make_sampling.py writes the probabilities and the chi-square limit), exact ids
// where the draw is degenerate, and a Tensor key inside rlx::jit.
#include "support/backends.hpp"
#include "support/check_error.hpp"

#include <rlx/ir/graph.hpp>
#include <rlx/random.hpp>
#include <rlx/rlx.hpp>
#include <rlx/sampling.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

namespace {

using rlx::DType;
using rlx::ErrorKind;
using rlx::Tensor;
using rlx::test::check_error;
using rlx::test::Fixture;
using rlx::test::on_both_backends;
namespace random = rlx::random;

constexpr int64_t kDraws = 20000;

void check_distribution(const std::string& name, uint64_t seed) {
  CAPTURE(name);
  Fixture f("sampling", name);
  Tensor logits = f("logits");
  std::vector<double> params = f("params").to_vector<double>();
  std::vector<double> want = f("want_probs").to_vector<double>();
  const double limit = f("want_chi2_limit").item<double>();
  const int64_t vocab = logits.size(0);
  // Every row the same logits: kDraws independent draws (each row has its own counters).
  Tensor rows = logits.reshape({1, vocab}).expand({kDraws, vocab});
  std::vector<int64_t> ids =
      rlx::sample(rows, int64_t(params[0]), params[1], params[2], seed).to_vector<int64_t>();
  std::vector<int64_t> counts(std::size_t(vocab), 0);
  for (int64_t id : ids) {
    REQUIRE(id >= 0);
    REQUIRE(id < vocab);
    ++counts[std::size_t(id)];
  }
  double chi2 = 0;
  for (std::size_t j = 0; j < want.size(); ++j) {
    CAPTURE(j);
    if (want[j] == 0) { // filtered out: never drawn
      CHECK(counts[j] == 0);
      continue;
    }
    double e = double(kDraws) * want[j];
    chi2 += (double(counts[j]) - e) * (double(counts[j]) - e) / e;
  }
  CHECK(chi2 < limit);
}

TEST_CASE("sample draws ids with HF's warped probabilities (chi-square), on both backends") {
  on_both_backends([] {
    for (const char* name : {"plain", "temperature", "top_k", "top_k_ties", "top_p", "all_warpers"})
      check_distribution(name, 2024);
  });
}

TEST_CASE("sample's ids do not depend on the backend or the thread count") {
  Tensor logits = random::normal(5, {64, 50});
  Tensor want;
  const int saved = rlx::num_threads();
  on_both_backends([&] {
    for (int threads : {1, 2, 4}) {
      rlx::set_num_threads(threads);
      Tensor ids = rlx::sample(logits, 10, 0.9, 0.8, 77);
      if (!want.defined()) want = ids;
      CHECK(ids.to_vector<int64_t>() == want.to_vector<int64_t>());
    }
  });
  rlx::set_num_threads(saved);
}

TEST_CASE("with no warper, sample is random::categorical with the same key") {
  on_both_backends([] {
    Tensor logits = random::normal(8, {16, 9}, 0.0, 2.0, DType::F64);
    CHECK(rlx::sample(logits, 0, 1.0, 1.0, 31).to_vector<int64_t>() ==
          random::categorical(31, logits).to_vector<int64_t>());
  });
}

TEST_CASE("temperature 0 and top_k 1 take the argmax, over any leading axes") {
  on_both_backends([] {
    Tensor logits = random::normal(3, {2, 3, 17});
    std::vector<int64_t> want = rlx::argmax(logits, -1).to_vector<int64_t>();
    Tensor greedy = rlx::sample(logits, 0, 1.0, 0.0, 1);
    CHECK(greedy.sizes() == rlx::Dims{2, 3});
    CHECK(greedy.to_vector<int64_t>() == want);
    CHECK(rlx::sample(logits, 1, 1.0, 1.3, 2).to_vector<int64_t>() == want);
    CHECK(rlx::sample(logits, 0, 1e-6, 1.0, 3).to_vector<int64_t>() == want);
  });
}

TEST_CASE("inside rlx::jit a key argument samples afresh without recompiling") {
  on_both_backends([] {
    Tensor logits = rlx::zeros({256, 10});
    auto f = rlx::jit([](Tensor l, Tensor key) { return rlx::sample(l, 0, 1.0, 1.0, key); });
    std::set<std::vector<int64_t>> seen;
    for (uint64_t s = 0; s < 3; ++s) {
      std::vector<int64_t> ids = f(logits, random::key_data(s)).to_vector<int64_t>();
      CHECK(ids == rlx::sample(logits, 0, 1.0, 1.0, s).to_vector<int64_t>());
      seen.insert(ids);
    }
    CHECK(seen.size() == 3);
    CHECK(f.stats().compiles == 1);
  });
}

TEST_CASE("bad sample arguments are rlx::Errors naming sample and the line") {
  Tensor logits = rlx::zeros({2, 5});
  std::string msg = check_error([&] { (void)rlx::sample(logits, 0, 0.0, 1.0, 1); },
                                ErrorKind::Value, "sample: top_p must be in (0, 1]");
  CHECK(msg.find("test_sampling.cpp") != std::string::npos);
  check_error([&] { (void)rlx::sample(logits, 0, 1.0, -1.0, 1); }, ErrorKind::Value,
              "sample: temperature must be finite and >= 0");
  check_error([&] { (void)rlx::sample(logits, -2, 1.0, 1.0, 1); }, ErrorKind::Value,
              "sample: top_k must be >= 0");
  check_error([] { (void)rlx::sample(rlx::zeros({}), 0, 1.0, 1.0, 1); }, ErrorKind::Shape,
              "sample: needs logits");
  check_error([&] { (void)rlx::sample(logits.astype(DType::I32), 0, 1.0, 1.0, 1); },
              ErrorKind::Type, "sample: needs float logits");
}

TEST_CASE("Graph::sample checks its declared shape and builds one sample node") {
  rlx::ir::Graph g("s");
  auto l = g.input("logits", rlx::Shape::of(std::vector<int64_t>{3, 7}, DType::F32));
  auto id = g.sample(l, 2, 0.9f, 0.5f, 11, rlx::Shape::of(std::vector<int64_t>{3}, DType::F32));
  CHECK(g.node(id).op.kind() == rlx::ir::OpKind::Sample);
  check_error(
      [&] {
        (void)g.sample(l, 2, 0.9f, 0.5f, 11, rlx::Shape::of(std::vector<int64_t>{7}, DType::F32));
      },
      ErrorKind::Shape, "sample: declared output");
}

} // namespace
