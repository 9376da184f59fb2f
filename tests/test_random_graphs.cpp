// tests/test_random_graphs.cpp -- random graphs of core ops give the same outputs on both backends.
#include "support/compare.hpp"
#include "support/random_graph.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::test;
using ir::OpKind;

namespace {

constexpr int kMaxGraphs = 3000;
constexpr double kDefaultSeconds = 20;
constexpr double kNoiseUlps = 8; ///< how far the conditioning check moves rounded results
constexpr int kReportedFailures = 10;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::optional<uint64_t> env_seed(const char* name) {
  std::optional<std::string> v = env(name);
  if (!v) return std::nullopt;
  char* end = nullptr;
  uint64_t seed = std::strtoull(v->c_str(), &end, 10);
  if (end == v->c_str() || *end != '\0') FAIL(name << "=" << *v << ": expected a decimal seed");
  return seed;
}

double budget_seconds() {
  std::optional<std::string> v = env("RLX_RANDOM_GRAPH_SECONDS");
  if (!v) return kDefaultSeconds;
  char* end = nullptr;
  double s = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || !(s >= 0))
    FAIL("RLX_RANDOM_GRAPH_SECONDS=" << *v << ": expected a number of seconds");
  return s;
}

/// Whether a backend computing f32 in f32 may round this op's float result differently from the
/// interpreter (everything but data movement and the ops that select or compare values).
bool rounds(const ir::Node& n) {
  ir::Family f = n.op.family();
  if (f == ir::Family::Leaf || f == ir::Family::Movement || f == ir::Family::Index) return false;
  switch (n.op.kind()) {
  case OpKind::Relu:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Sign:
  case OpKind::StopGradient:
  case OpKind::Clamp:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Round:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Where:
  case OpKind::Cast:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
    return false;
  default:
    return true;
  }
}

/// Whether the op sums terms (its rounding error scales with the sum of their magnitudes).
bool accumulates(const ir::Node& n) {
  OpKind k = n.op.kind();
  return k == OpKind::ReduceSum || k == OpKind::ReduceMean || k == OpKind::Cumsum ||
         k == OpKind::MatMul;
}

/// A pseudo-random number in [-1, 1) that depends only on `value` and `salt`.
double hashed_unit(double value, uint64_t salt) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return Rng(bits ^ salt).uniform(-1, 1);
}

/// A model of a correct backend that computes in the output dtype with its own rounding: the
/// interpreter node by node, every rounded float result moved by up to `ulps` ulps of itself
/// (of the sum of the magnitudes of its terms for sums and matmul): by exactly +-ulps when
/// `direction` is +-1, else by a fraction that is a pseudo-random function of the op kind, the
/// value and `seed` (a backend is deterministic: equal values, e.g. ties, stay equal). Nodes
/// for which `wrong` holds have their float results also scaled by (1 + wrong_by): a model of a
/// wrong kernel.
RunResult noisy_run(const ir::Graph& g, const std::vector<Buffer>& leaves, double ulps,
                    uint64_t seed, const std::function<bool(const ir::Node&)>& wrong = {},
                    double wrong_by = 0, double direction = 0) {
  std::vector<Buffer> values(g.len());
  std::size_t leaf = 0;
  for (const ir::Node& n : g.nodes()) {
    if (n.op.kind() == OpKind::Input || n.op.kind() == OpKind::Param) {
      values[n.id.index] = leaves[leaf++];
      continue;
    }
    std::vector<const Buffer*> ops;
    for (ir::NodeId in : n.inputs) ops.push_back(&values[in.index]);
    Buffer out = interp::eval_node(n, ops);
    double eps = epsilon_of(out.dtype());
    if (ir::is_float(out.dtype()) && rounds(n)) {
      Buffer scale = out;
      if (accumulates(n)) { // the same op on the magnitudes of its operands
        std::vector<Buffer> mags;
        for (const Buffer* b : ops) {
          Buffer m = *b;
          for (int64_t i = 0; i < m.numel() && ir::is_float(m.dtype()); ++i)
            m.set_f64(i, std::fabs(m.get_f64(i)));
          mags.push_back(std::move(m));
        }
        std::vector<const Buffer*> mag_ptrs;
        for (const Buffer& m : mags) mag_ptrs.push_back(&m);
        scale = interp::eval_node(n, mag_ptrs);
      }
      for (int64_t i = 0; i < out.numel(); ++i) {
        double v = out.get_f64(i);
        double u =
            direction != 0 ? direction : hashed_unit(v, seed * 1000003u + uint64_t(n.op.kind()));
        double d = u * ulps * eps * std::fabs(scale.get_f64(i));
        if (std::isfinite(v) && std::isfinite(d)) out.set_f64(i, v + d);
      }
    }
    if (wrong && wrong(n) && ir::is_float(out.dtype()))
      for (int64_t i = 0; i < out.numel(); ++i) out.set_f64(i, out.get_f64(i) * (1 + wrong_by));
    values[n.id.index] = std::move(out);
  }
  RunResult r;
  for (ir::NodeId id : g.outputs) r.outputs.push_back(values[id.index]);
  return r;
}

/// Elements of the interpreter's outputs that are ill-conditioned: they move beyond their
/// tolerance when every rounded intermediate result is moved by a few ulps (noisy_run: all up,
/// all down, and randomly).
/// There a cancellation, or a comparison, rounding, cast or argmax of a value near its
/// threshold, turns tiny rounding differences into large ones, and a correct backend that rounds
/// differently may legitimately differ; those elements are not compared (and are counted).
struct Conditioning {
  std::vector<std::vector<uint8_t>> skip; ///< per output, per element
  int64_t skipped = 0, total = 0;
};

Conditioning conditioning(const RandomGraph& rg, const std::vector<Buffer>& want) {
  Conditioning c;
  for (const Buffer& w : want) {
    c.skip.emplace_back(std::size_t(w.numel()), uint8_t(0));
    c.total += w.numel();
  }
  for (double direction : {1.0, -1.0, 0.0}) {
    RunResult r = noisy_run(rg.graph, rg.leaves, kNoiseUlps, rg.seed * 0x9e3779b97f4a7c15ull, {}, 0,
                            direction);
    for (std::size_t k = 0; k < want.size(); ++k) {
      Tolerance tol = output_tolerance(rg.graph, rg.graph.outputs[k]);
      for (int64_t i = 0; i < want[k].numel(); ++i)
        if (!element_close(want[k], r.outputs[k], i, tol)) c.skip[k][std::size_t(i)] = 1;
    }
  }
  for (const auto& s : c.skip)
    for (uint8_t m : s) c.skipped += m;
  return c;
}

/// What checking one random graph found: "" when the backends agree.
struct Outcome {
  std::string report;
  int64_t skipped = 0, total = 0;
};

/// `rg` on the interpreter and on `other` (a backend, or a model of one for the self-tests
/// below), compared output by output on the well-conditioned elements; a failure is shrunk to a
/// minimal graph when `minimize`.
Outcome check_graph(const RandomGraph& rg, const std::string& name, const Runner& other,
                    bool minimize) {
  Outcome o;
  RunResult a = run_on(Backend::Interp, rg.graph, rg.leaves);
  if (a.error) {
    o.report = "the interpreter rejects generated graph " + std::to_string(rg.seed) +
               " (a generator bug): " + *a.error + "\n" + ir::to_text(rg.graph);
    return o;
  }
  Conditioning cond = conditioning(rg, a.outputs);
  o.skipped = cond.skipped;
  o.total = cond.total;
  RunResult b = other(rg.graph, rg.leaves);
  Comparison cmp = compare_runs(rg.graph, a, b, name, &cond.skip);
  if (cmp.problems.empty()) return o;
  std::ostringstream os;
  os << "seed " << rg.seed << " (rerun it alone: RLX_RANDOM_GRAPH_SEED=" << rg.seed << ")\n"
     << ir::to_text(rg.graph) << cmp.problems;
  if (minimize && !cmp.bad.empty()) {
    auto [h, leaves] = subgraph(rg.graph, rg.leaves, {rg.graph.outputs[cmp.bad.front()]});
    os << minimize_failure(h, leaves, other, name);
  }
  o.report = os.str();
  return o;
}

Outcome check_on_backend(const RandomGraph& rg, Backend other, bool minimize) {
  return check_graph(rg, std::string(enum_name(other)), backend_runner(other), minimize);
}

std::string seeds_str(const std::vector<uint64_t>& seeds) {
  std::string s;
  for (std::size_t i = 0; i < seeds.size() && i < 50; ++i) s += " " + std::to_string(seeds[i]);
  return s + (seeds.size() > 50 ? " ..." : "");
}

} // namespace

TEST_CASE("random graphs: random DAGs of core ops give the same outputs on both backends") {
  Backend other = other_backend();
  double budget = budget_seconds();
  uint64_t first = env_seed("RLX_RANDOM_GRAPH_FIRST_SEED").value_or(1);
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<uint64_t> failed;
  int64_t skipped = 0, total = 0;
  int graphs = 0;
  for (uint64_t seed = first; graphs < kMaxGraphs && elapsed() < budget; ++seed, ++graphs) {
    RandomGraph rg = random_graph(seed);
    std::string text = ir::to_text(rg.graph);
    INFO("seed " << seed << " (RLX_RANDOM_GRAPH_SEED=" << seed << " reruns it):\n" << text);
    Outcome o = check_on_backend(rg, other, failed.size() < kReportedFailures);
    skipped += o.skipped;
    total += o.total;
    if (graphs % 200 == 199) clear_cache(); // keep the compile cache small
    if (o.report.empty()) continue;
    failed.push_back(seed);
    if (failed.size() <= kReportedFailures) FAIL_CHECK(o.report);
  }
  clear_cache();
  MESSAGE(graphs << " random graphs (seeds " << first << ".." << first + uint64_t(graphs) - 1
                 << ") in " << elapsed() << " s on Interp and " << enum_name(other) << "; "
                 << skipped << " of " << total
                 << " output elements ill-conditioned and not compared; " << failed.size()
                 << " graphs differ");
  INFO(failed.size() << " of " << graphs << " graphs differ, seeds:" << seeds_str(failed));
  CHECK(failed.empty());
  CHECK(graphs > 0);
}

TEST_CASE("random graphs: the seed in RLX_RANDOM_GRAPH_SEED (default 1) agrees on both backends") {
  Backend other = other_backend();
  std::optional<uint64_t> env_value = env_seed("RLX_RANDOM_GRAPH_SEED");
  uint64_t seed = env_value.value_or(1);
  RandomGraph rg = random_graph(seed);
  if (env_value) {
    std::ostringstream leaves;
    std::vector<ir::NodeId> ids = leaf_ids(rg.graph);
    for (std::size_t i = 0; i < ids.size(); ++i)
      leaves << "  " << rg.graph.node(ids[i]).op.attrs<ir::LeafAttrs>().name << " = "
             << values_str(rg.leaves[i]) << "\n";
    MESSAGE("seed " << seed << ":\n" << ir::to_text(rg.graph) << leaves.str());
  }
  Outcome o = check_on_backend(rg, other, true);
  INFO(o.skipped << " of " << o.total << " output elements ill-conditioned and not compared");
  CHECK_MESSAGE(o.report.empty(), o.report);
}

TEST_CASE(
    "random graphs: the generator is deterministic and builds valid graphs of every core op") {
  std::set<OpKind> seen;
  int64_t nodes = 0;
  for (uint64_t seed = 1; seed <= 600; ++seed) {
    RandomGraph rg = random_graph(seed);
    INFO("seed " << seed << ":\n" << ir::to_text(rg.graph));
    CHECK_NOTHROW(ir::verify(rg.graph));
    REQUIRE(rg.leaves.size() == leaf_ids(rg.graph).size());
    RandomGraph again = random_graph(seed);
    CHECK(again.graph == rg.graph);
    CHECK(again.leaves == rg.leaves);
    RunResult r = run_on(Backend::Interp, rg.graph, rg.leaves);
    CHECK_MESSAGE(!r.error, r.error.value_or(""));
    for (const ir::Node& n : rg.graph.nodes()) {
      seen.insert(n.op.kind());
      CHECK(n.shape.num_elements().value_or(0) <= RandomGraphOptions{}.max_numel);
    }
    nodes += int64_t(rg.graph.len());
  }
  std::vector<OpKind> want = activation_kinds();
  for (OpKind k : binary_kinds()) want.push_back(k);
  for (OpKind k : reduce_kinds()) want.push_back(k);
  for (OpKind k :
       {OpKind::Input,   OpKind::Param,   OpKind::Constant,  OpKind::StopGradient, OpKind::Cast,
        OpKind::Clamp,   OpKind::Where,   OpKind::ArgMax,    OpKind::ArgMin,       OpKind::Cumsum,
        OpKind::Softmax, OpKind::Reshape, OpKind::Transpose, OpKind::Narrow,       OpKind::Slice,
        OpKind::Concat,  OpKind::Expand,  OpKind::Reverse,   OpKind::Pad,          OpKind::Gather,
        OpKind::MatMul})
    want.push_back(k);
  std::string missing;
  for (OpKind k : want)
    if (!seen.count(k)) missing += " " + std::string(ir::op_name(k));
  INFO("op kinds never generated:" << missing);
  CHECK(missing.empty());
  MESSAGE("600 random graphs, " << nodes << " nodes");
}

TEST_CASE("random graphs: the comparison absorbs a few ulps of rounding per op and catches a "
          "kernel off by 1e-3") {
  // A correct backend that rounds differently (every rounded result moved by up to 4 ulps) must
  // pass; a wrong kernel (one node's results scaled by 1 + 1e-3) must be caught in most graphs.
  int graphs = 400, noisy_failed = 0, mutated = 0, caught = 0;
  std::string first_noisy;
  for (uint64_t seed = 1; seed <= uint64_t(graphs); ++seed) {
    RandomGraph rg = random_graph(seed);
    Runner noisy = [&](const ir::Graph& g, const std::vector<Buffer>& l) {
      return noisy_run(g, l, 4, seed);
    };
    Outcome o = check_graph(rg, "noisy", noisy, false);
    if (!o.report.empty() && noisy_failed++ == 0) first_noisy = o.report;
    // the wrong node: a rounded float node that the first output depends on
    std::vector<uint8_t> needed(rg.graph.len(), 0);
    needed[rg.graph.outputs[0].index] = 1;
    std::vector<ir::NodeId> candidates;
    for (std::size_t i = rg.graph.len(); i-- > 0;) {
      const ir::Node& n = rg.graph.nodes()[i];
      if (!needed[i]) continue;
      for (ir::NodeId in : n.inputs) needed[in.index] = 1;
      if (rounds(n) && ir::is_float(n.shape.dtype())) candidates.push_back(n.id);
    }
    if (candidates.empty()) continue;
    Rng rng(seed);
    ir::NodeId wrong = rng.pick(candidates);
    ++mutated;
    Runner mutated_run = [&](const ir::Graph& g, const std::vector<Buffer>& l) {
      return noisy_run(g, l, 4, seed, [&](const ir::Node& n) { return n.id == wrong; }, 1e-3);
    };
    Outcome m = check_graph(rg, "wrong", mutated_run, false);
    caught += !m.report.empty();
  }
  INFO("first graph the noise alone fails:\n" << first_noisy);
  CHECK(noisy_failed == 0);
  INFO("a node off by 1e-3 was caught in " << caught << " of " << mutated << " graphs");
  CHECK(caught * 3 >= mutated * 2);
  MESSAGE("noise: " << noisy_failed << " of " << graphs << " graphs fail; a node off by 1e-3 "
                    << "is caught in " << caught << " of " << mutated);
}

TEST_CASE("random graphs: a failure is shrunk to the one op whose kernel is wrong") {
  // A model of a backend whose tanh is off by 1e-3 (and that rounds a few ulps differently).
  Runner bad_tanh = [](const ir::Graph& g, const std::vector<Buffer>& l) {
    return noisy_run(
        g, l, 4, 1, [](const ir::Node& n) { return n.op.kind() == OpKind::Tanh; }, 1e-3);
  };
  int shrunk = 0, failing = 0;
  for (uint64_t seed = 1; seed <= 300 && failing < 20; ++seed) {
    RandomGraph rg = random_graph(seed);
    Outcome o = check_graph(rg, "bad-tanh", bad_tanh, true);
    if (o.report.empty()) continue;
    ++failing;
    INFO(o.report);
    std::size_t at = o.report.find("minimal failing graph");
    std::size_t end = o.report.find("\n}", at);
    std::string minimal = at == std::string::npos ? "" : o.report.substr(at, end - at);
    bool alone = minimal.find("%1 = tanh(%0) :") != std::string::npos &&
                 minimal.find("%2 =") == std::string::npos;
    CHECK(alone);
    shrunk += alone;
  }
  CHECK(failing >= 10);
  MESSAGE(shrunk << " of " << failing << " failures shrunk to a one-node tanh graph");
}
