// src/frontend/jit.cpp -- rlx::jit: trace once per signature, bind per size, replay compiled code.
//
// A call's signature is each argument's dtype, rank and sizes, with the sizes named by
// JitOptions::dynamic_dims replaced by symbols. A new signature runs the user's function once on
// placeholder tensors (the trace); the recorded values become a graph whose Input nodes are the
// arguments (in order) and whose Param nodes are the computed tensors the function captured.
// Each binding of the symbols is specialized with Graph::bind and compiled (through the process
// cache); later calls with that binding run the executable directly.
#include "frontend/impl.hpp"

#include "rlx/jit.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <span>
#include <unordered_map>

namespace rlx::detail {

namespace {

/// A vector whose first N elements live inside it (no allocation for the usual few).
template <class T, std::size_t N> class SmallVec {
public:
  void push_back(T v) {
    if (size_ < N)
      inline_[size_] = v;
    else {
      if (size_ == N) heap_.assign(inline_.begin(), inline_.end());
      heap_.push_back(v);
    }
    ++size_;
  }
  void clear() {
    size_ = 0;
    heap_.clear();
  }
  std::span<const T> span() const {
    return size_ <= N ? std::span<const T>(inline_.data(), size_) : std::span<const T>(heap_);
  }

private:
  std::array<T, N> inline_{};
  std::size_t size_ = 0;
  std::vector<T> heap_;
};

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// One traced signature.
struct Entry {
  ir::Graph graph;                                             // symbolic
  std::vector<std::shared_ptr<const interp::Buffer>> captured; // Param leaves, in graph order
  std::vector<uint32_t> symbols;                               // the dynamic symbols, in order
  std::map<std::vector<int64_t>, std::shared_ptr<const Executable>> executables;
};

} // namespace

/// Record the graph of `outs` (values of trace `trace` over `placeholders`).
TracedGraph extract_trace(const std::vector<Tensor>& placeholders, const std::vector<Tensor>& outs,
                          uint64_t trace, const std::string& name) {
  TracedGraph t;
  ir::Graph& g = t.graph;
  g.name = name;
  std::unordered_map<const TensorImpl*, ir::NodeId> ids;
  for (std::size_t i = 0; i < placeholders.size(); ++i) {
    const TensorImpl* p = placeholders[i].impl().get();
    ids[p] = g.input("arg" + std::to_string(i), p->shape);
  }
  std::lock_guard lock(eval_mutex());
  std::vector<std::pair<TensorImpl*, std::size_t>> stack;
  for (const Tensor& out : outs) {
    stack.emplace_back(out.impl().get(), 0);
    while (!stack.empty()) {
      auto& [impl, next] = stack.back();
      if (ids.count(impl)) {
        stack.pop_back();
        continue;
      }
      if (impl->trace != 0 && impl->trace != trace)
        fail(ErrorKind::Trace,
             "rlx::jit: the function returned or used a tensor traced by another rlx::jit call "
             "(it escaped its trace)",
             at_loc(impl->loc));
      if (impl->buffer) {
        ids[impl] = g.param("c" + std::to_string(t.captured.size()), impl->shape);
        t.captured.push_back(impl->buffer);
        stack.pop_back();
        continue;
      }
      if (next < impl->inputs.size()) {
        TensorImpl* in = impl->inputs[next++].get();
        if (!ids.count(in)) stack.emplace_back(in, 0);
        continue;
      }
      std::vector<ir::NodeId> in_ids;
      for (const auto& in : impl->inputs) in_ids.push_back(ids.at(in.get()));
      RLX_CHECK(impl->op.has_value(), "a pending tensor has no op");
      ids[impl] = g.append_node(*impl->op, std::move(in_ids), impl->shape, std::nullopt, impl->loc);
      stack.pop_back();
    }
  }
  std::vector<ir::NodeId> out_ids;
  for (const Tensor& out : outs) out_ids.push_back(ids.at(out.impl().get()));
  g.set_outputs(std::move(out_ids));
  return t;
}

std::vector<Tensor> make_placeholders(std::span<const Shape> shapes, uint64_t trace) {
  std::vector<Tensor> placeholders;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto p = std::make_shared<TensorImpl>();
    p->shape = shapes[i];
    p->op = ir::Op(ir::OpKind::Input, ir::LeafAttrs{"arg" + std::to_string(i)});
    p->trace = trace;
    p->arg = int32_t(i);
    p->loc = Loc::current();
    placeholders.emplace_back(std::move(p));
  }
  return placeholders;
}

struct JitCore::State {
  JitOptions options;
  std::mutex build_mu; // serializes tracing and compiling for this function
  std::map<std::string, std::shared_ptr<Entry>> entries;
  std::shared_ptr<Entry> last;
  // The previous call's argument shapes (exact) and what they resolved to: a call with the same
  // shapes skips the signature string, the map lookups and the binding.
  std::vector<int64_t> fast_shapes;
  std::shared_ptr<Entry> fast_entry;
  std::shared_ptr<const Executable> fast_exe;
  // Counted on every call without a lock; the rest of the stats under stats_mu.
  std::atomic<int64_t> calls{0}, cache_hits{0};
  mutable std::mutex stats_mu;
  JitStats stats;
};

JitCore::JitCore(JitOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
}
JitCore::~JitCore() = default;

JitStats JitCore::stats() const {
  std::lock_guard lock(state_->stats_mu);
  JitStats s = state_->stats;
  s.calls = state_->calls.load(std::memory_order_relaxed);
  s.cache_hits = state_->cache_hits.load(std::memory_order_relaxed);
  return s;
}

std::optional<ir::Graph> JitCore::last_graph() const {
  std::lock_guard lock(state_->build_mu);
  if (!state_->last) return std::nullopt;
  return state_->last->graph;
}

std::vector<Tensor> JitCore::call(std::span<const Tensor> args, const Body& body) {
  State& st = *state_;
  st.calls.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < args.size(); ++i) // the message is built only for a failure
    if (!args[i].defined())
      check_defined(args[i], "rlx::jit argument " + std::to_string(i), Loc::current());
  // Inside another trace: trace through (the outer jit compiles the whole thing).
  for (const Tensor& a : args)
    if (a.is_traced()) return body(args);

  // The arguments' buffers (computing pending arguments first), read under one lock: a cached
  // call's whole overhead is a few hundred nanoseconds, so every lock and allocation shows.
  SmallVec<const interp::Buffer*, 8> leaves;
  auto read_buffers = [&] {
    std::lock_guard lock(eval_mutex());
    for (const Tensor& a : args) {
      if (!a.impl()->buffer) return false;
      leaves.push_back(a.impl()->buffer.get());
    }
    return true;
  };
  if (!read_buffers()) {
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
  std::shared_ptr<Entry> entry;
  std::shared_ptr<const Executable> exe;
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
    std::string key;
    for (const Shape& s : shapes) key += ir::short_str(s) + ";";

    {
      std::lock_guard lock(st.build_mu);
      auto it = st.entries.find(key);
      if (it == st.entries.end()) {
        auto t0 = Clock::now();
        TraceScope scope;
        std::vector<Tensor> placeholders = make_placeholders(shapes, scope.id());
        std::vector<Tensor> outs = body(placeholders);
        for (std::size_t i = 0; i < outs.size(); ++i)
          check_defined(outs[i], "rlx::jit output " + std::to_string(i), Loc::current());
        auto e = std::make_shared<Entry>();
        TracedGraph t = extract_trace(placeholders, outs, scope.id(), st.options.name);
        e->graph = std::move(t.graph);
        e->captured = std::move(t.captured);
        e->symbols = e->graph.dynamic_symbols();
        it = st.entries.emplace(key, std::move(e)).first;
        std::lock_guard slock(st.stats_mu);
        ++st.stats.traces;
        st.stats.trace_ms += ms_since(t0);
      }
      entry = it->second;
      st.last = entry;
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
      auto ex = entry->executables.find(bound);
      if (ex != entry->executables.end()) {
        exe = ex->second;
        st.cache_hits.fetch_add(1, std::memory_order_relaxed);
      } else {
        auto t0 = Clock::now();
        ir::Graph g = entry->symbols.empty() ? entry->graph : entry->graph.bind(binding);
        exe = compile(g, st.options.backend.value_or(default_backend()));
        entry->executables.emplace(bound, exe);
        std::lock_guard slock(st.stats_mu);
        ++st.stats.compiles;
        st.stats.compile_ms += ms_since(t0);
      }
    }
  };
  {
    std::lock_guard lock(st.build_mu);
    if (st.fast_exe && std::ranges::equal(st.fast_shapes, exact.span())) {
      entry = st.fast_entry;
      exe = st.fast_exe;
    }
  }
  if (exe) {
    st.cache_hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    resolve();
    std::lock_guard lock(st.build_mu);
    st.fast_shapes.assign(exact.span().begin(), exact.span().end());
    st.fast_entry = entry;
    st.fast_exe = exe;
  }

  for (const auto& c : entry->captured) leaves.push_back(c.get());
  std::vector<interp::Buffer> results = run_executable(exe, leaves.span());
  std::vector<Tensor> outs;
  outs.reserve(results.size());
  for (interp::Buffer& b : results) outs.emplace_back(std::move(b));
  return outs;
}

} // namespace rlx::detail
