// src/frontend/jit.cpp -- rlx::jit: trace once per signature, bind per size, replay compiled code.
//
// A call's signature is each argument's dtype, rank and sizes, with the sizes named by
// JitOptions::dynamic_dims replaced by symbols. A new signature runs the user's function once on
// placeholder tensors (trace_graph); the recorded values become a graph whose Input nodes are
// the arguments (in order) and whose Param nodes are the computed tensors the function captured.
// Each binding of the symbols is specialized by the entry's SymbolicExecutable (the first
// through the process cache; from the second on, the optimized symbolic graph is bound, planned
// and prepared, without verify or passes); later calls with that binding run the executable
// directly.
#include "frontend/impl.hpp"

#include "rlx/jit.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <span>

namespace rlx::detail {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// One traced signature.
struct Entry {
  ir::Graph graph;                                     // symbolic
  std::vector<std::shared_ptr<const Buffer>> captured; // Param leaves, in graph order
  std::vector<uint32_t> symbols;                       // the dynamic symbols, in order
  std::shared_ptr<const SymbolicExecutable> symbolic;  // when symbols is not empty
  std::map<std::vector<int64_t>, std::shared_ptr<const Executable>> executables;
  std::shared_ptr<const void> structure; // the body's output structure (rlx/jit.hpp)
};

} // namespace

struct JitCore::State {
  JitOptions options;
  Loc loc; // where rlx::jit was called
  // Serializes tracing and compiling for this function. A FrameMutex: a host that abandons
  // the frames of a trace (rlx::frames_abandoned) gets it released.
  FrameMutex build_mu;
  std::map<std::string, std::shared_ptr<Entry>> entries;
  std::shared_ptr<Entry> last;
  // The previous call's argument shapes (exact) and what they resolved to: a call with the same
  // shapes skips the signature string, the map lookups and the binding. Under a plain mutex of
  // its own, held for a few loads and never across user code (cheaper than the build lock).
  // Plain pointers: entries and their executables are never removed while the function lives,
  // so a call holds no reference counts of its own.
  std::mutex fast_mu;
  std::vector<int64_t> fast_shapes;
  std::string fast_key;
  const Entry* fast_entry = nullptr;
  const std::shared_ptr<const Executable>* fast_exe = nullptr;
  int64_t fast_hits = 0; // under fast_mu: calls served here (each a call and a cache hit)
  // Counted without a lock by the other calls; the rest of the stats under stats_mu.
  std::atomic<int64_t> calls{0}, cache_hits{0};
  mutable std::mutex stats_mu;
  JitStats stats;

  /// The build lock; an rlx::Error when this thread holds it already: the function was called
  /// again inside its own trace, and waiting for itself would hang.
  std::unique_lock<FrameMutex> lock_build() {
    if (build_mu.held_by_this_thread())
      fail(ErrorKind::Trace,
           "rlx::jit: the jitted function was called again while it was being traced (a "
           "recursive call with untraced arguments, last_graph() inside it, or a trace a host "
           "abandoned without rlx::frames_abandoned()); recurse in the plain function instead",
           at_loc(loc));
    return std::unique_lock(build_mu);
  }
};

JitCore::JitCore(JitOptions options, Loc loc) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  state_->loc = loc;
}
JitCore::~JitCore() = default;

JitStats JitCore::stats() const {
  std::lock_guard lock(state_->stats_mu);
  JitStats s = state_->stats;
  int64_t fast_hits = 0;
  {
    std::lock_guard fast(state_->fast_mu);
    fast_hits = state_->fast_hits;
  }
  s.calls = state_->calls.load(std::memory_order_relaxed) + fast_hits;
  s.cache_hits = state_->cache_hits.load(std::memory_order_relaxed) + fast_hits;
  return s;
}

std::optional<ir::Graph> JitCore::last_graph() const {
  auto lock = state_->lock_build();
  if (!state_->last) return std::nullopt;
  return state_->last->graph;
}

std::vector<Tensor> JitCore::call(std::span<const Tensor> args, const Body& body,
                                  std::string_view static_key,
                                  std::shared_ptr<const void>& structure) {
  State& st = *state_;
  // Every call counts once: here when it leaves early or computes its arguments, else below
  // (a call served by the previous call's executable counts under fast_mu).
  bool counted = false;
  auto count = [&] {
    if (!counted) st.calls.fetch_add(1, std::memory_order_relaxed);
    counted = true;
  };
  for (std::size_t i = 0; i < args.size(); ++i) // the message is built only for a failure
    if (!args[i].defined()) {
      count();
      check_defined(args[i], "rlx::jit argument " + std::to_string(i), st.loc);
    }
  // Inside another trace (of rlx::jit or a transform): trace through, so the outer trace
  // compiles the whole thing and values the function captures from it stay traced. Inside its
  // own trace with untraced arguments it would recurse forever: lock_build reports that.
  bool traced_arg = std::ranges::any_of(args, [](const Tensor& a) { return a.is_traced(); });
  if (traced_arg || (in_trace() && !st.build_mu.held_by_this_thread())) {
    count();
    return body(args);
  }

  // The arguments' buffers (computing pending arguments first), read under one lock: a cached
  // call's whole overhead is a few hundred nanoseconds, so every lock and allocation shows.
  SmallVec<const Buffer*, 8> leaves;
  auto read_buffers = [&] {
    std::lock_guard lock(eval_mutex());
    for (const Tensor& a : args) {
      if (!a.impl()->buffer) return false;
      leaves.push_back(a.impl()->buffer.get());
    }
    return true;
  };
  if (!read_buffers()) {
    count();
    eval(args);
    leaves.clear();
    RLX_CHECK(read_buffers(), "eval left a jit argument pending");
  }

  // The exact shapes: the same as the previous call's resolve to the same executable.
  SmallVec<int64_t, 32> exact;
  for (const Tensor& a : args) {
    const Shape& s = a.shape();
    exact.push_back(int64_t(s.dtype()));
    exact.push_back(int64_t(s.rank()));
    for (const ir::Dim& d : s.dims()) exact.push_back(d.size());
  }
  const Entry* entry = nullptr;
  const std::shared_ptr<const Executable>* exe = nullptr; // an entry's, in its executables map
  // Otherwise the signature, with the dynamic axes as symbols, finds (or traces) the entry and
  // the binding finds (or compiles) the executable.
  auto resolve = [&] {
    std::vector<Shape> shapes;
    for (const Tensor& a : args) shapes.push_back(a.shape());
    std::vector<std::pair<uint32_t, int64_t>> sizes_by_symbol;
    for (const DynamicDim& d : st.options.dynamic_dims) {
      if (d.arg < 0 || std::size_t(d.arg) >= args.size())
        fail(ErrorKind::Value, "rlx::jit: dynamic dim \"", d.name, "\" names argument ", d.arg,
             " but the function got ", args.size());
      Shape& s = shapes[std::size_t(d.arg)];
      int64_t r = int64_t(s.rank());
      if (d.axis < -r || d.axis >= r)
        fail(ErrorKind::Value, "rlx::jit: dynamic dim \"", d.name, "\" names axis ", d.axis,
             " of argument ", d.arg, ", which is ",
             ir::short_str(args[std::size_t(d.arg)].shape()));
      std::size_t axis = std::size_t(d.axis < 0 ? d.axis + r : d.axis);
      if (d.name.empty()) fail(ErrorKind::Value, "rlx::jit: a dynamic dim needs a name");
      int64_t size = s.dims()[axis].size();
      uint32_t sym = ir::symbol_id(d.name);
      sizes_by_symbol.emplace_back(sym, size);
      s = s.with_dim(axis, ir::Dim::dynamic(sym));
    }
    std::string key(static_key);
    key += "|";
    for (const Shape& s : shapes) key += ir::short_str(s) + ";";

    {
      auto lock = st.lock_build();
      auto it = st.entries.find(key);
      if (it == st.entries.end()) {
        auto t0 = Clock::now();
        ExtractedGraph t = trace_graph(shapes, body, st.options.name, "rlx::jit", st.loc);
        auto e = std::make_shared<Entry>();
        e->graph = std::move(t.graph);
        e->captured = std::move(t.leaves);
        e->symbols = e->graph.dynamic_symbols();
        e->structure = structure;
        it = st.entries.emplace(key, std::move(e)).first;
        std::lock_guard slock(st.stats_mu);
        ++st.stats.traces;
        st.stats.trace_ms += ms_since(t0);
      }
      entry = it->second.get();
      st.last = it->second;
      // The binding: every symbol's size (one name on several axes must agree).
      ir::DimBinding binding;
      std::vector<int64_t> bound;
      for (uint32_t sym : entry->symbols) {
        std::optional<int64_t> size;
        for (const auto& [s, n] : sizes_by_symbol) {
          if (s != sym) continue;
          if (size && *size != n)
            fail(ErrorKind::Bind, "rlx::jit: dynamic dim \"", ir::symbol_name(sym), "\" has sizes ",
                 *size, " and ", n, " in one call");
          size = n;
        }
        RLX_CHECK(size.has_value(), "traced graph uses symbol ", sym, " that no argument binds");
        binding.set(sym, *size);
        bound.push_back(*size);
      }
      Entry& e = *it->second;
      auto ex = e.executables.find(bound);
      if (ex != e.executables.end()) {
        exe = &ex->second;
        st.cache_hits.fetch_add(1, std::memory_order_relaxed);
      } else {
        auto t0 = Clock::now();
        Backend backend = st.options.backend.value_or(default_backend());
        std::shared_ptr<const Executable> made;
        if (e.symbols.empty()) {
          made = compile(e.graph, backend);
        } else {
          if (!e.symbolic || e.symbolic->backend() != backend)
            e.symbolic = compile_symbolic(e.graph, backend);
          made = e.symbolic->specialize(binding);
        }
        exe = &e.executables.emplace(bound, std::move(made)).first->second;
        std::lock_guard slock(st.stats_mu);
        ++st.stats.compiles;
        st.stats.compile_ms += ms_since(t0);
      }
    }
  };
  {
    std::lock_guard lock(st.fast_mu);
    if (st.fast_exe && std::ranges::equal(st.fast_shapes, exact.span()) &&
        st.fast_key == static_key) {
      entry = st.fast_entry;
      exe = st.fast_exe;
      if (!counted) ++st.fast_hits;
    }
  }
  if (exe && counted) st.cache_hits.fetch_add(1, std::memory_order_relaxed);
  if (!exe) {
    count();
    resolve();
    std::lock_guard lock(st.fast_mu);
    st.fast_shapes.assign(exact.span().begin(), exact.span().end());
    st.fast_key.assign(static_key);
    st.fast_entry = entry;
    st.fast_exe = exe;
  }

  if (structure != entry->structure) structure = entry->structure;
  for (const auto& c : entry->captured) leaves.push_back(c.get());
  std::vector<Buffer> results = run_executable(*exe, leaves.span());
  std::vector<Tensor> outs;
  outs.reserve(results.size());
  for (Buffer& b : results) outs.emplace_back(std::move(b));
  return outs;
}

} // namespace rlx::detail
