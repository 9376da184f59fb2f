// src/runtime/executable.cpp -- backends, executables and the process-wide compile cache.
#include "rlx/runtime.hpp"

#include "runtime/backend.hpp"

#include "rlx/host.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "rlx/passes.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

namespace rlx {

namespace {

/// The reference interpreter as a backend: the graph is the whole executable.
class InterpExecutable final : public Executable {
public:
  explicit InterpExecutable(ir::Graph g) : graph_(std::move(g)) {}
  std::vector<Buffer> run(std::span<const Buffer* const> leaves) const override {
    return interp::run_leaves(graph_, leaves);
  }
  const ir::Graph& graph() const override { return graph_; }
  Backend backend() const override { return Backend::Interp; }
  std::string describe() const override {
    return "interpreter: " + std::to_string(graph_.len()) +
           " nodes, each run by its reference kernel\n";
  }

private:
  ir::Graph graph_;
};

Backend initial_backend() {
  const char* env = std::getenv("RLX_BACKEND");
  if (env == nullptr || *env == '\0') return Backend::Jit;
  std::string v(env);
  if (v == "interp") return Backend::Interp;
  if (v == "jit") return Backend::Jit;
  fail(ErrorKind::Value, "RLX_BACKEND=", v, ": expected interp or jit");
}

ExtentPolicy initial_extent_policy() {
  const char* env = std::getenv("RLX_EXTENTS");
  if (env == nullptr || *env == '\0') return ExtentPolicy::Generic;
  std::string v(env);
  if (v == "generic") return ExtentPolicy::Generic;
  if (v == "specialize") return ExtentPolicy::Specialize;
  fail(ErrorKind::Value, "RLX_EXTENTS=", v, ": expected generic or specialize");
}

std::atomic<int>& extent_policy_slot() {
  static std::atomic<int> slot{int(initial_extent_policy())};
  return slot;
}

struct Cache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const Executable>> entries;
  CacheStats stats;
  std::shared_ptr<const Executable> last_run;
  // run_executable counts without the lock (a cached rlx::jit call is a few hundred
  // nanoseconds); last_run is replaced under the lock only when another executable ran. The
  // time is summed in integer nanoseconds: one atomic add, where a double needs a CAS loop.
  std::atomic<int64_t> runs{0};
  std::atomic<int64_t> run_ns{0};
  std::atomic<const Executable*> last_run_raw{nullptr};
};

Cache& cache() {
  static Cache c;
  return c;
}

std::atomic<int>& backend_slot() {
  static std::atomic<int> slot{int(initial_backend())};
  return slot;
}

std::shared_ptr<const Executable> build(const ir::Graph& g, Backend backend) {
  runtime::check_available(backend, "compile");
  return runtime::build_optimized(runtime::optimize(g, backend), backend);
}

} // namespace

void runtime::check_available(Backend backend, const char* what) {
  if (!backend_available(backend))
    fail(ErrorKind::Unsupported, what, ": backend ", enum_name(backend),
         " is not available in this build; use Backend::Interp");
}

ir::Graph runtime::optimize(const ir::Graph& graph, Backend backend) {
  ir::verify(graph);
  // The compile pipeline (rlx/passes.hpp) runs in front of both backends: its default passes
  // keep the graph's leaves as they are, and every value bit for bit but for the fused residual
  // norms, which keep their sums unrounded.
  ir::Graph opt = graph;
  const runtime::CompilingBackend* b = runtime::find_backend(backend);
  passes::compile_pipeline(opt, b ? b->pipeline_options() : passes::PipelineOptions{});
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  ++c.stats.pipelines;
  return opt;
}

std::shared_ptr<const Executable> runtime::build_optimized(ir::Graph opt, Backend backend) {
  if (const runtime::CompilingBackend* b = runtime::find_backend(backend))
    return b->compile(ir::plan_lir(std::move(opt), plan_options(backend)));
  return std::make_shared<InterpExecutable>(std::move(opt));
}

void runtime::count_respecialized() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  ++c.stats.respecialized;
}

ir::PlanOptions plan_options(Backend backend) {
  const runtime::CompilingBackend* b = runtime::find_backend(backend);
  return b ? b->plan_options() : ir::PlanOptions{};
}

ir::LirModule plan_for(const ir::Graph& graph, Backend backend) {
  if (graph.has_dynamic_dims())
    fail(ErrorKind::Bind, "plan_for: graph @", graph.name,
         " has dynamic dims; bind them first (Graph::bind)");
  return ir::plan_lir(runtime::optimize(graph, backend), plan_options(backend));
}

bool backend_available(Backend backend) {
  return backend == Backend::Interp || runtime::find_backend(backend) != nullptr;
}

Backend default_backend() { return Backend(backend_slot().load()); }

void set_default_backend(Backend backend) {
  if (!backend_available(backend))
    fail(ErrorKind::Unsupported, "set_default_backend: backend ", enum_name(backend),
         " is not available in this build");
  backend_slot().store(int(backend));
}

ExtentPolicy extent_policy() { return ExtentPolicy(extent_policy_slot().load()); }

void set_extent_policy(ExtentPolicy policy) { extent_policy_slot().store(int(policy)); }

std::shared_ptr<const Executable> compile(const ir::Graph& graph, Backend backend, bool* hit) {
  detail::WorkScope work; // holds the cache's, LLVM's and malloc's locks: not to be abandoned
  if (graph.has_dynamic_dims())
    fail(ErrorKind::Bind, "compile: graph @", graph.name,
         " has dynamic dims; bind them first (Graph::bind)");
  std::string key = std::string(enum_name(backend)) + "\n";
  if (backend == Backend::Jit) key += std::string(enum_name(extent_policy())) + "\n";
  key += ir::to_text(graph);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mu);
    auto it = c.entries.find(key);
    if (it != c.entries.end()) {
      ++c.stats.hits;
      if (hit) *hit = true;
      return it->second;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const Executable> exe = build(graph, backend);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lock(c.mu);
  auto [it, inserted] = c.entries.emplace(std::move(key), exe);
  if (inserted) {
    ++c.stats.compiles;
    c.stats.compile_ms += ms;
  } else {
    ++c.stats.hits; // another thread compiled the same graph meanwhile
  }
  if (hit) *hit = !inserted;
  return it->second;
}

std::string Executable::describe() const { return ir::to_text(graph()); }

namespace {

/// Whether two buffers' bytes overlap (empty ones overlap nothing).
bool overlap(const Buffer& a, const Buffer& b) {
  std::span<const std::byte> x = a.bytes(), y = b.bytes();
  if (x.empty() || y.empty()) return false;
  return x.data() < y.data() + y.size() && y.data() < x.data() + x.size();
}

/// What run_into and bind check of their arguments (`what` names the function): as many leaves
/// as the graph has, each of its node's shape; as many outputs, each of its output's shape; no
/// output sharing bytes with a leaf or another output.
void check_call(const ir::Graph& g, const char* what, std::span<const Buffer* const> leaves,
                std::span<Buffer* const> outputs, const Loc& loc) {
  // The leaves' nodes are found by walking the graph: nothing is allocated on this path, which
  // run_into takes on every call.
  std::size_t fed = 0;
  for (const ir::Node& n : g.nodes()) fed += ir::has_trait(n.op.kind(), ir::kFed);
  if (leaves.size() != fed)
    fail(ErrorKind::Runtime, what, ": ", leaves.size(), " leaf buffers for graph @", g.name,
         " with ", fed, " inputs and params", detail::at_loc(loc));
  auto leaf_name = [](const ir::Node& n) {
    return detail::cat(n.op.name(), " \"", n.op.attrs<ir::LeafAttrs>().name, "\"");
  };
  std::size_t k = 0;
  for (const ir::Node& n : g.nodes()) {
    if (!ir::has_trait(n.op.kind(), ir::kFed)) continue;
    const Buffer* leaf = leaves[k++];
    if (leaf == nullptr)
      fail(ErrorKind::Runtime, what, ": missing ", leaf_name(n), " (", ir::short_str(n.shape),
           ") of graph @", g.name, detail::at_loc(loc));
    if (leaf->shape() != n.shape)
      fail(ErrorKind::Runtime, what, ": ", leaf_name(n), " is ", ir::short_str(leaf->shape()),
           " but graph @", g.name, " expects ", ir::short_str(n.shape), detail::at_loc(loc));
  }
  if (outputs.size() != g.outputs.size())
    fail(ErrorKind::Runtime, what, ": ", outputs.size(), " output buffers for graph @", g.name,
         " with ", g.outputs.size(), " outputs", detail::at_loc(loc));
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const ir::Shape& want = g.shape(g.outputs[o]);
    if (outputs[o] == nullptr)
      fail(ErrorKind::Runtime, what, ": missing output ", o, " (", ir::short_str(want),
           ") of graph @", g.name, detail::at_loc(loc));
    if (outputs[o]->shape() != want)
      fail(ErrorKind::Runtime, what, ": output ", o, " is ", ir::short_str(outputs[o]->shape()),
           " but graph @", g.name, " makes ", ir::short_str(want), detail::at_loc(loc));
    std::size_t leaf = 0;
    for (const ir::Node& n : g.nodes())
      if (ir::has_trait(n.op.kind(), ir::kFed) && overlap(*outputs[o], *leaves[leaf++]))
        fail(ErrorKind::Runtime, what, ": output ", o, " (", ir::short_str(want),
             ") shares memory with ", leaf_name(n), " of graph @", g.name,
             "; an output must not overlap a leaf or another output", detail::at_loc(loc));
    for (std::size_t p = 0; p < o; ++p)
      if (overlap(*outputs[o], *outputs[p]))
        fail(ErrorKind::Runtime, what, ": output ", o, " (", ir::short_str(want),
             ") shares memory with output ", p, " of graph @", g.name,
             "; an output must not overlap a leaf or another output", detail::at_loc(loc));
  }
}

/// A bound call that checks nothing and calls run_into_checked (the default: the interpreter).
class RunIntoCall final : public BoundCall {
public:
  using Checked = void (*)(const Executable&, std::span<const Buffer* const>,
                           std::span<Buffer* const>);
  RunIntoCall(const Executable& exe, Checked checked, std::span<const Buffer* const> leaves,
              std::span<Buffer* const> outputs)
      : BoundCall(exe.weak_from_this().lock()), exe_(exe), checked_(checked),
        leaves_(leaves.begin(), leaves.end()), outputs_(outputs.begin(), outputs.end()) {}
  void run() override { checked_(exe_, leaves_, outputs_); }

private:
  const Executable& exe_;
  Checked checked_;
  std::vector<const Buffer*> leaves_;
  std::vector<Buffer*> outputs_;
};

} // namespace

void Executable::run_into(std::span<const Buffer* const> leaves, std::span<Buffer* const> outputs,
                          Loc loc) const {
  check_call(graph(), "Executable::run_into", leaves, outputs, loc);
  run_into_checked(leaves, outputs);
}

std::unique_ptr<BoundCall> Executable::bind(std::span<const Buffer* const> leaves,
                                            std::span<Buffer* const> outputs, Loc loc) const {
  check_call(graph(), "Executable::bind", leaves, outputs, loc);
  return bind_checked(leaves, outputs);
}

void Executable::run_into_checked(std::span<const Buffer* const> leaves,
                                  std::span<Buffer* const> outputs) const {
  std::vector<Buffer> results = run(leaves);
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    std::span<const std::byte> from = results[o].bytes();
    if (!from.empty()) std::memcpy(outputs[o]->bytes().data(), from.data(), from.size());
  }
}

std::unique_ptr<BoundCall> Executable::bind_checked(std::span<const Buffer* const> leaves,
                                                    std::span<Buffer* const> outputs) const {
  // A lambda here may call the protected member; the bound call holds it as a plain function.
  RunIntoCall::Checked checked = [](const Executable& e, std::span<const Buffer* const> l,
                                    std::span<Buffer* const> o) { e.run_into_checked(l, o); };
  return std::make_unique<RunIntoCall>(*this, checked, leaves, outputs);
}

std::vector<Buffer> run_executable(const std::shared_ptr<const Executable>& exe,
                                   std::span<const Buffer* const> leaves) {
  RLX_CHECK(exe != nullptr, "run_executable of a null executable");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Buffer> out = exe->run(leaves);
  auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
  Cache& c = cache();
  c.runs.fetch_add(1, std::memory_order_relaxed);
  c.run_ns.fetch_add(int64_t(ns.count()), std::memory_order_relaxed);
  if (c.last_run_raw.load(std::memory_order_acquire) != exe.get()) {
    std::lock_guard lock(c.mu);
    c.last_run = exe;
    c.last_run_raw.store(exe.get(), std::memory_order_release);
  }
  return out;
}

std::shared_ptr<const Executable> last_run() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  return c.last_run;
}

CacheStats cache_stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  CacheStats s = c.stats;
  s.runs = c.runs.load(std::memory_order_relaxed);
  s.run_ms = double(c.run_ns.load(std::memory_order_relaxed)) * 1e-6;
  s.entries = int64_t(c.entries.size());
  if (const runtime::CompilingBackend* b = runtime::find_backend(Backend::Jit)) b->add_stats(s);
  return s;
}

void clear_cache() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  c.entries.clear();
  c.last_run.reset();
  c.last_run_raw.store(nullptr, std::memory_order_release);
}

} // namespace rlx
