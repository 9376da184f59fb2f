// tests/support/compare.hpp -- comparing two backends: tolerances, close(), the backend under test.
#pragma once

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlx::test {

using rlx::Buffer;

/// |got - want| <= atol + rtol * |want|.
struct Tolerance {
  double rtol = 0, atol = 0;
  friend Tolerance operator*(Tolerance t, double k) { return {t.rtol * k, t.atol * k}; }
  friend bool operator==(const Tolerance&, const Tolerance&) = default;
};

/// The larger of each part.
inline Tolerance loosest(Tolerance a, Tolerance b) {
  return {std::max(a.rtol, b.rtol), std::max(a.atol, b.atol)};
}

/// The tolerance of ONE op's result of dtype `t` when two backends are compared (not a
/// reference-vs-numpy tolerance; see output_tolerance for graphs of several ops):
///  - f32: rtol 2e-5, atol 1e-6. The JIT computes f32 math in f32 (its own exp/tanh/erf
///    approximations, fused multiply-adds, reassociated vector sums) while the interpreter
///    computes in double and rounds once, so f32 results may differ by a few ulps per op.
///  - f64: rtol 1e-12, atol 1e-14 (both compute in double; libm vs. JIT math, summation order).
///  - f16 / bf16: one ulp of the type, relative (2^-10 / 2^-7); atol as f32 (both backends
///    compute them in at least f32 and round once to the type).
///  - c64: as f32, for the real and the imaginary part.
///  - integers and bool: exact.
inline Tolerance backend_tolerance(ir::DType t) {
  switch (t) {
  case ir::DType::F32:
  case ir::DType::C64:
    return {2e-5, 1e-6};
  case ir::DType::F64:
    return {1e-12, 1e-14};
  case ir::DType::F16:
    return {0x1p-10, 1e-6};
  case ir::DType::BF16:
    return {0x1p-7, 1e-6};
  default:
    return {0, 0};
  }
}

/// The tolerance of output `out` of `g`: the loosest backend_tolerance among the floating-point
/// nodes it depends on through floating-point values (an f32 result cast to f64 keeps f32's
/// error), times the number of computing ops on its longest such path (movement and indexing
/// ops copy values and do not count; at least 1). Integer and bool values are exact: they are
/// compared exactly, and a float computed from them starts afresh.
inline Tolerance output_tolerance(const ir::Graph& g, ir::NodeId out) {
  std::size_t n = std::size_t(out.index) + 1;
  std::vector<int> depth(n, 0);
  std::vector<Tolerance> tol(n);
  for (std::size_t i = 0; i < n; ++i) {
    const ir::Node& node = g.nodes()[i];
    ir::DType t = node.shape.dtype();
    if (!ir::is_float(t) && !ir::is_complex(t)) continue; // exact: tolerance 0, depth 0
    Tolerance tl = backend_tolerance(t);
    int d = 0;
    for (ir::NodeId in : node.inputs) {
      tl = loosest(tl, tol[in.index]);
      d = std::max(d, depth[in.index]);
    }
    ir::Family f = node.op.family();
    bool computes = !node.inputs.empty() && f != ir::Family::Movement && f != ir::Family::Index;
    depth[i] = d + (computes ? 1 : 0);
    tol[i] = tl;
  }
  return tol[out.index] * double(std::max(1, depth[out.index]));
}

/// |a - b| <= atol + rtol * |b| (b is the reference); NaN equals NaN (any sign or payload), and
/// an infinity equals only the infinity of the same sign.
inline bool close(double a, double b, Tolerance t) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= t.atol + t.rtol * std::fabs(b);
}

/// Whether element i of `got` matches `want` (same dtypes): integers and bool exactly (a bool
/// byte other than 0 and 1 never matches), complex per part, floats with close().
inline bool element_close(const Buffer& want, const Buffer& got, int64_t i, Tolerance t) {
  ir::DType d = want.dtype();
  if (ir::is_bool(d)) {
    auto byte = std::to_integer<unsigned>(got.bytes()[std::size_t(i)]);
    return byte <= 1 && int64_t(byte) == want.get_i64(i);
  }
  if (ir::is_int(d)) return want.get_i64(i) == got.get_i64(i);
  if (ir::is_complex(d)) {
    std::complex<float> a = got.get_c64(i), b = want.get_c64(i);
    return close(a.real(), b.real(), t) && close(a.imag(), b.imag(), t);
  }
  return close(got.get_f64(i), want.get_f64(i), t);
}

/// "[1, 2]" for the flat row-major index `flat` of shape s.
inline std::string index_str(const ir::Shape& s, int64_t flat) {
  std::vector<int64_t> sizes = s.sizes(), idx(sizes.size(), 0);
  for (std::size_t i = sizes.size(); i-- > 0;) {
    idx[i] = sizes[i] ? flat % sizes[i] : 0;
    flat = sizes[i] ? flat / sizes[i] : 0;
  }
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < idx.size(); ++i) os << (i ? ", " : "") << idx[i];
  os << "]";
  return os.str();
}

/// Element i printed exactly enough to tell neighbours apart (bool: its raw byte).
inline std::string element_str(const Buffer& b, int64_t i) {
  std::ostringstream os;
  ir::DType d = b.dtype();
  if (ir::is_bool(d)) {
    auto byte = std::to_integer<unsigned>(b.bytes()[std::size_t(i)]);
    os << (byte == 0 ? "false" : byte == 1 ? "true" : "byte " + std::to_string(byte));
  } else if (ir::is_int(d)) {
    os << b.get_i64(i);
  } else if (ir::is_complex(d)) {
    os.precision(9);
    os << b.get_c64(i);
  } else {
    os.precision(d == ir::DType::F64 ? 17 : 9);
    os << b.get_f64(i);
  }
  return os.str();
}

/// The first `max` values of a buffer, "[1, 2, 3, ...]" (for reports).
inline std::string values_str(const Buffer& b, int64_t max = 12) {
  std::string s = "[";
  for (int64_t i = 0; i < std::min(b.numel(), max); ++i) s += (i ? ", " : "") + element_str(b, i);
  return s + (b.numel() > max ? ", ...]" : "]");
}

/// "" when `got` matches `want` within `tol`; otherwise a report: shape or dtype difference, or
/// how many elements differ and the first `max_shown` of them with their index and both values.
/// Elements whose `skip` entry is nonzero are not compared (skip is empty or one per element).
inline std::string mismatch_report(const Buffer& want, const Buffer& got, Tolerance tol,
                                   std::span<const uint8_t> skip = {}, int max_shown = 5) {
  std::ostringstream os;
  if (got.shape() != want.shape()) {
    os << "got " << ir::short_str(got.shape()) << ", want " << ir::short_str(want.shape());
    return os.str();
  }
  int64_t count = 0;
  std::string first;
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (!skip.empty() && skip[std::size_t(i)]) continue;
    if (element_close(want, got, i, tol)) continue;
    if (count++ < max_shown)
      first += "\n    at " + index_str(want.shape(), i) + ": want " + element_str(want, i) +
               ", got " + element_str(got, i);
  }
  if (count == 0) return "";
  os << ir::short_str(want.shape()) << ": " << count << " of " << want.numel()
     << " elements differ";
  if (ir::is_float(want.dtype()) || ir::is_complex(want.dtype()))
    os << " (rtol " << tol.rtol << ", atol " << tol.atol << ")";
  os << first;
  if (count > max_shown) os << "\n    ...";
  return os.str();
}

/// doctest: CHECKs that `got` has want's dtype and shape and matches it within `tol`; a failure
/// names `context` and the first mismatching indices with both values. Returns whether it matched.
inline bool check_buffers_close(const Buffer& want, const Buffer& got, Tolerance tol,
                                [[maybe_unused]] const std::string& context) {
  INFO(context);
  CHECK(got.dtype() == want.dtype());
  CHECK(got.shape() == want.shape());
  if (got.shape() != want.shape()) return false;
  std::string report = mismatch_report(want, got, tol);
  CHECK_MESSAGE(report.empty(), report);
  return report.empty();
}

/// check_buffers_close for a Tensor result and its reference (a fixture's values): the same
/// sizes and dtype, integers and bools exactly, floats within `tol`.
inline bool check_close(const Tensor& got, const Tensor& want, Tolerance tol,
                        const std::string& what) {
  return check_buffers_close(want.buffer(), got.buffer(), tol, what);
}

/// doctest: CHECKs that `got` has want's sizes and dtype and that every element (a complex one by
/// its distance) is within tol * max(max |want|, floor): for results whose rounding error scales
/// with the whole array (transforms, factorizations), not with each element. A NaN fails.
inline bool check_close_scaled(const Tensor& got, const Tensor& want, double tol, double floor,
                               [[maybe_unused]] const std::string& what) {
  const Buffer &g = got.buffer(), &w = want.buffer();
  INFO(what << ": got " << ir::short_str(g.shape()) << ", want " << ir::short_str(w.shape()));
  CHECK(g.shape() == w.shape());
  if (g.shape() != w.shape()) return false;
  auto at = [](const Buffer& b, int64_t i) {
    return ir::is_complex(b.dtype()) ? std::complex<double>(b.get_c64(i))
                                     : std::complex<double>(b.get_f64(i));
  };
  double scale = floor, worst = 0;
  for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::abs(at(w, i)));
  for (int64_t i = 0; i < w.numel(); ++i) {
    double err = std::abs(at(g, i) - at(w, i));
    if (!(err <= worst)) worst = err; // a NaN stays
  }
  CHECK_MESSAGE(worst <= tol * scale, what << ": max error " << worst << " > " << tol * scale);
  return worst <= tol * scale;
}

// ---- The backend under test

/// The backend compared with the interpreter: Backend::Jit when this build has it; otherwise
/// RLX_TEST_OTHER_BACKEND=interp (for developing these tests: the interpreter against itself).
/// When neither is available the calling test FAILS (these tests never pass vacuously).
inline Backend other_backend() {
  if (backend_available(Backend::Jit)) return Backend::Jit;
  const char* env = std::getenv("RLX_TEST_OTHER_BACKEND");
  std::string v = env ? env : "";
  if (v == "interp") return Backend::Interp;
  std::string why =
      v.empty() ? "no second backend to compare with the interpreter: "
                  "rlx::backend_available(Backend::Jit) is false in this build. Set "
                  "RLX_TEST_OTHER_BACKEND=interp to run these tests against the interpreter "
                  "itself (only meaningful while developing the tests)."
                : "RLX_TEST_OTHER_BACKEND=" + v +
                      ": expected \"interp\" (the JIT is used by itself once "
                      "rlx::backend_available(Backend::Jit) is true, and it is false here)";
  FAIL(why);
  throw std::logic_error(why); // not reached: FAIL ends the test case
}

/// The Input and Param nodes of g, in graph order (the order Executable::run takes leaves in).
inline std::vector<ir::NodeId> leaf_ids(const ir::Graph& g) {
  std::vector<ir::NodeId> ids;
  for (const ir::Node& n : g.nodes())
    if (n.op.kind() == ir::OpKind::Input || n.op.kind() == ir::OpKind::Param) ids.push_back(n.id);
  return ids;
}

/// What running a graph on one backend gave: the outputs, or what it threw.
struct RunResult {
  std::vector<Buffer> outputs;
  std::optional<std::string> error; ///< set when compile or run threw
  bool rlx_error = false;           ///< the exception was an rlx::Error (a user error)
};

/// rlx::compile(g, backend) and run it on `leaves` (graph order), catching what it throws. With
/// `strict` (for the backend under test), also an error when the run modifies a leaf buffer or
/// when a second run of the same executable gives other results (stale or shared buffers).
inline RunResult run_on(Backend backend, const ir::Graph& g, const std::vector<Buffer>& leaves,
                        bool strict = false) {
  RunResult r;
  try {
    std::shared_ptr<const Executable> exe = compile(g, backend);
    if (exe->backend() != backend)
      throw std::logic_error("compile(g, " + std::string(enum_name(backend)) + ") returned an " +
                             std::string(enum_name(exe->backend())) + " executable");
    std::vector<const Buffer*> ptrs;
    for (const Buffer& b : leaves) ptrs.push_back(&b);
    std::vector<Buffer> before;
    if (strict) before = leaves;
    r.outputs = exe->run(ptrs);
    if (!strict) return r;
    for (std::size_t k = 0; k < leaves.size(); ++k)
      if (leaves[k] != before[k])
        throw std::logic_error("the run wrote into leaf " + std::to_string(k) + " (" +
                               ir::short_str(leaves[k].shape()) + ")");
    std::vector<Buffer> again = exe->run(ptrs);
    for (std::size_t k = 0; k < again.size() && k < r.outputs.size(); ++k) {
      std::string d = mismatch_report(r.outputs[k], again[k], output_tolerance(g, g.outputs[k]));
      if (!d.empty())
        throw std::logic_error("output " + std::to_string(k) +
                               " differs on a second run of the same executable: " + d);
    }
  } catch (const Error& e) {
    r.error = "rlx::Error (" + std::string(error_kind_name(e.kind())) + "): " + e.what();
    r.rlx_error = true;
  } catch (const InternalError& e) {
    r.error = std::string("rlx::InternalError: ") + e.what();
  } catch (const std::exception& e) {
    r.error = std::string("exception: ") + e.what();
  }
  return r;
}

/// Something that runs a graph on leaves like a backend does (a backend, or a model of one).
using Runner = std::function<RunResult(const ir::Graph&, const std::vector<Buffer>&)>;

/// The backend under test as a Runner (run_on with `strict`).
inline Runner backend_runner(Backend backend) {
  return [backend](const ir::Graph& g, const std::vector<Buffer>& leaves) {
    return run_on(backend, g, leaves, true);
  };
}

/// "output 1 (%4 = reduce_sum(%2) : [3] f32)".
inline std::string output_str(const ir::Graph& g, std::size_t k) {
  return "output " + std::to_string(k) + " (" + ir::node_to_text(g, g.outputs[k]) + ")";
}

/// How two runs of g compare.
struct Comparison {
  std::string problems;         ///< "" when they agree
  std::vector<std::size_t> bad; ///< indices of the outputs that differ
};

/// Compare run `b` (named `nb` in reports) with the interpreter's run `a` of g, output by output
/// with output_tolerance. When the interpreter threw an rlx::Error, `b` must throw one too.
/// `skip` (optional, one vector per output) marks elements not to compare.
inline Comparison compare_runs(const ir::Graph& g, const RunResult& a, const RunResult& b,
                               const std::string& nb,
                               const std::vector<std::vector<uint8_t>>* skip = nullptr) {
  Comparison c;
  if (a.error) {
    if (!(b.error && b.rlx_error && a.rlx_error))
      c.problems = "Interp: " + *a.error + "\n  " + nb + ": " +
                   (b.error ? *b.error : std::string("returned results instead of an rlx::Error"));
    return c;
  }
  if (b.error) {
    c.problems = nb + " failed: " + *b.error;
    return c;
  }
  if (b.outputs.size() != a.outputs.size()) {
    c.problems = nb + " returned " + std::to_string(b.outputs.size()) + " outputs, Interp " +
                 std::to_string(a.outputs.size());
    return c;
  }
  for (std::size_t k = 0; k < a.outputs.size(); ++k) {
    std::span<const uint8_t> s;
    if (skip && k < skip->size()) s = (*skip)[k];
    std::string r =
        mismatch_report(a.outputs[k], b.outputs[k], output_tolerance(g, g.outputs[k]), s);
    if (r.empty()) continue;
    c.bad.push_back(k);
    c.problems += output_str(g, k) + ", " + nb + " vs Interp: " + r + "\n";
  }
  return c;
}

// ---- Shrinking a failure to a minimal graph

/// The nodes `roots` depend on, as a graph of their own (leaves keep their names and take their
/// buffers from `leaves`, given in g's graph order); its outputs are `roots`.
inline std::pair<ir::Graph, std::vector<Buffer>> subgraph(const ir::Graph& g,
                                                          const std::vector<Buffer>& leaves,
                                                          const std::vector<ir::NodeId>& roots) {
  std::vector<uint8_t> keep(g.len(), 0);
  for (ir::NodeId r : roots) keep[r.index] = 1;
  for (std::size_t i = g.len(); i-- > 0;)
    if (keep[i])
      for (ir::NodeId in : g.nodes()[i].inputs) keep[in.index] = 1;
  ir::Graph h(g.name);
  std::vector<Buffer> h_leaves;
  std::vector<ir::NodeId> map(g.len());
  std::size_t leaf = 0;
  for (const ir::Node& n : g.nodes()) {
    bool is_leaf = n.op.kind() == ir::OpKind::Input || n.op.kind() == ir::OpKind::Param;
    if (keep[n.id.index]) {
      std::vector<ir::NodeId> ins;
      for (ir::NodeId in : n.inputs) ins.push_back(map[in.index]);
      map[n.id.index] = h.append_node(n.op, ins, n.shape, n.name);
      if (is_leaf) h_leaves.push_back(leaves.at(leaf));
    }
    leaf += is_leaf;
  }
  std::vector<ir::NodeId> outs;
  for (ir::NodeId r : roots) outs.push_back(map[r.index]);
  h.set_outputs(outs);
  return {std::move(h), std::move(h_leaves)};
}

/// A one-op graph: node `id` of g with its operands as inputs a0, a1, ... (constants stay
/// constants) fed with `values` (one buffer per node of g, the reference's values).
inline std::pair<ir::Graph, std::vector<Buffer>>
isolate(const ir::Graph& g, const std::vector<Buffer>& values, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  ir::Graph h(g.name + "_node" + std::to_string(id.index));
  std::vector<Buffer> feeds;
  std::vector<std::pair<ir::NodeId, ir::NodeId>> seen; // g id -> h id (repeated operands alias)
  std::vector<ir::NodeId> ins;
  for (ir::NodeId in : n.inputs) {
    auto it = std::find_if(seen.begin(), seen.end(), [&](auto& p) { return p.first == in; });
    if (it != seen.end()) {
      ins.push_back(it->second);
      continue;
    }
    const ir::Node& src = g.node(in);
    ir::NodeId mapped;
    if (src.op.kind() == ir::OpKind::Constant) {
      mapped = h.append_node(src.op, {}, src.shape, std::nullopt);
    } else {
      mapped = h.input("a" + std::to_string(feeds.size()), src.shape);
      feeds.push_back(values.at(in.index));
    }
    seen.emplace_back(in, mapped);
    ins.push_back(mapped);
  }
  h.set_outputs({h.append_node(n.op, ins, n.shape, n.name)});
  return {std::move(h), std::move(feeds)};
}

/// After a comparison of g on `b` (named `nb`) against the interpreter failed: look for the
/// smallest graph that still fails. Every node of g becomes an output; the first node whose value
/// differs is run alone on its (interpreter) operand values. Returns a report with the minimal
/// graph.
inline std::string minimize_failure(const ir::Graph& g, const std::vector<Buffer>& leaves,
                                    const Runner& b, const std::string& nb) {
  std::vector<ir::NodeId> all;
  for (const ir::Node& n : g.nodes()) all.push_back(n.id);
  auto [every, every_leaves] = subgraph(g, leaves, all);
  RunResult ra = run_on(Backend::Interp, every, every_leaves);
  RunResult rb = b(every, every_leaves);
  if (ra.error || rb.error || ra.outputs.size() != all.size() || rb.outputs.size() != all.size())
    return "(with every node as an output: " + (rb.error ? nb + " " + *rb.error : "no result") +
           ")";
  for (std::size_t i = 0; i < all.size(); ++i) {
    Tolerance tol = output_tolerance(every, every.outputs[i]);
    if (mismatch_report(ra.outputs[i], rb.outputs[i], tol).empty()) continue;
    auto [one, feeds] = isolate(every, ra.outputs, all[i]);
    RunResult oa = run_on(Backend::Interp, one, feeds);
    RunResult ob = b(one, feeds);
    Comparison c = compare_runs(one, oa, ob, nb);
    std::ostringstream os;
    if (!c.problems.empty()) {
      os << "minimal failing graph: node %" << i << " alone, fed with the interpreter's operand "
         << "values:\n"
         << ir::to_text(one);
      for (std::size_t k = 0; k < feeds.size(); ++k)
        os << "  a" << k << " = " << values_str(feeds[k]) << "\n";
      os << c.problems;
    } else {
      os << "node %" << i << " is the first to differ (" << ir::node_to_text(every, all[i])
         << "), but alone it agrees: its error comes from its context (accumulation, fusion). "
         << "Its subgraph:\n"
         << ir::to_text(subgraph(g, leaves, {all[i]}).first)
         << mismatch_report(ra.outputs[i], rb.outputs[i], tol) << "\n";
    }
    return os.str();
  }
  return "(every node agrees when all of them are outputs: the failure depends on which values "
         "are outputs, e.g. a fusion or buffer-reuse bug)";
}

} // namespace rlx::test
