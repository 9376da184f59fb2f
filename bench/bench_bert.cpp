// bench/bench_bert.cpp -- one post-LN BERT encoder layer (12 heads, erf GELU, a padding mask) at
// [4,15,384] (FFN 1536) and [8,128,768] (FFN 3072), forward only, on 1 and 2 threads: built
// with RLX's builders (the layer of tests/test_bert_layer.cpp, which checks it against
// PyTorch within 1e-4), run through the compile pipeline with every fusion on, compiled once
// with rlx::compile(g, Backend::Jit) and timed through Executable::run. The PyTorch peers
// (eager and torch.jit.trace + freeze, the same layer as nn.TransformerEncoderLayer) are
// bench/peers_bert.py; both print rows of the table "bert layer" (size = batch x sequence).
// The row "rlx" feeds the weights as Params on every call (the layer as rlx::jit traces it);
// "rlx, weights constant" bakes them into the graph first (passes::param_specialize, as a user
// with fixed weights does), so the GEMM steps pack them once per executable. Notes give each
// plan's arena against the liveness lower bound, and the process's RSS.
#include "bench_util.hpp"
#include "bench_value.hpp"

#include <rlx/all.hpp>
#include <rlx/passes.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr char kTable[] = "bert layer";

struct Dims {
  int64_t b, s, d, h, f;
};

rlx::Buffer weyl(std::vector<int64_t> dims, double scale, uint64_t seed) {
  rlx::Buffer out(rlx::ir::Shape::of(dims, rlx::ir::DType::F32));
  for (int64_t i = 0; i < out.numel(); ++i) {
    uint64_t k = ((uint64_t(i) + seed * 7919) * 2654435761ull) % 4294967296ull;
    out.set_f64(i, scale * (-1.0 + 2.0 * double(k) / 4294967296.0));
  }
  return out;
}

/// The plan's arena against the liveness lower bound: at each step, the (aligned) bytes of the
/// arena values live then (from the step writing one to its last reader); no placement fits in
/// less than the largest such sum.
std::string arena_note(const rlx::ir::Graph& g) {
  using namespace rlx::ir;
  LirModule plan = rlx::plan_for(g, rlx::Backend::Jit);
  const Memory& m = plan.memory;
  std::vector<uint64_t> live(plan.steps.size() + 1, 0);
  for (const Node& n : plan.mir.nodes()) {
    if (m.places[n.id.index].home != Home::Arena) continue;
    uint64_t bytes =
        (uint64_t(n.shape.size_bytes().value_or(0)) + m.alignment - 1) / m.alignment * m.alignment;
    const Lifetime& l = m.lifetimes[n.id.index];
    for (uint32_t s = l.first; s <= l.last && s < live.size(); ++s) live[s] += bytes;
  }
  uint64_t bound = *std::max_element(live.begin(), live.end());
  auto mib = [](uint64_t b) { return std::to_string(double(b) / (1 << 20)).substr(0, 6) + " MiB"; };
  return "arena " + mib(m.arena_size) + ", liveness lower bound " + mib(bound) + " (" +
         std::to_string(bound ? double(m.arena_size) / double(bound) : 1.0).substr(0, 5) +
         "x), every value its own slot " + mib(m.naive_size);
}

/// Resident memory now and at its peak (VmRSS, VmHWM of /proc/self/status).
std::string rss_note() {
  std::ifstream in("/proc/self/status");
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0 || line.rfind("VmHWM:", 0) == 0)
      out += (out.empty() ? "" : ", ") + line;
  return out;
}

void run(const Dims& d, const bench::Args& args, const bench::Budget& budget) {
  using namespace rlx::ir;
  Graph g("bert_encoder_layer");
  NodeId x = g.input("hidden", Shape({d.b, d.s, d.d}, DType::F32));
  NodeId mask = g.input("mask", Shape({d.b, d.s}, DType::F32));
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"qkv_w", {d.d, 3 * d.d}}, {"qkv_b", {3 * d.d}}, {"out_w", {d.d, d.d}}, {"out_b", {d.d}},
      {"ln1_g", {d.d}},          {"ln1_b", {d.d}},     {"ff1_w", {d.d, d.f}}, {"ff1_b", {d.f}},
      {"ff2_w", {d.f, d.d}},     {"ff2_b", {d.d}},     {"ln2_g", {d.d}},      {"ln2_b", {d.d}}};
  std::map<std::string, NodeId> p;
  for (const auto& [name, dims] : shapes) p[name] = g.param(name, Shape::of(dims, DType::F32));
  NodeId qkv = g.linear_bias(x, p["qkv_w"], p["qkv_b"]);
  NodeId q = g.narrow_(qkv, 2, 0, d.d), k = g.narrow_(qkv, 2, d.d, d.d),
         v = g.narrow_(qkv, 2, 2 * d.d, d.d);
  NodeId ctx = g.attention(q, k, v, mask, d.h, d.d / d.h, Shape({d.b, d.s, d.d}, DType::F32));
  NodeId attn = g.linear_bias(ctx, p["out_w"], p["out_b"]);
  NodeId x1 = g.ln(g.add(attn, x), p["ln1_g"], p["ln1_b"], 1e-5f);
  NodeId h = g.linear_bias_act(x1, p["ff1_w"], p["ff1_b"], Activation::Gelu);
  NodeId f = g.linear_bias(h, p["ff2_w"], p["ff2_b"]);
  g.set_outputs({g.ln(g.add(x1, f), p["ln2_g"], p["ln2_b"], 1e-5f)});
  // Leaf values by name (in the graph's order of leaves, as the seeds always were).
  std::map<std::string, rlx::Buffer> values;
  uint64_t seed = 1;
  for (const Node& n : g.nodes()) {
    if (n.op.kind() != OpKind::Input && n.op.kind() != OpKind::Param) continue;
    const std::string& name = n.op.attrs<LeafAttrs>().name;
    if (name == "mask") {
      rlx::Buffer m(n.shape);
      for (int64_t i = 0; i < m.numel(); ++i) m.set_f64(i, 1.0);
      values[name] = m;
    } else {
      bool gain = name == "ln1_g" || name == "ln2_g";
      rlx::Buffer b = weyl(n.shape.sizes(), name == "hidden" ? 1.0 : 0.05, seed++);
      if (gain)
        for (int64_t i = 0; i < b.numel(); ++i) b.set_f64(i, 1.0 + b.get_f64(i));
      values[name] = b;
    }
  }
  Graph baked = g;
  rlx::passes::PipelineOptions opts;
  opts.fuse = rlx::passes::FuseOptions::all();
  rlx::passes::compile_pipeline(g, opts);
  for (const auto& [name, value] : values)
    if (name != "hidden" && name != "mask") opts.passes.params[name] = value;
  rlx::passes::compile_pipeline(baked, opts);

  std::string size =
      "[" + std::to_string(d.b) + "," + std::to_string(d.s) + "," + std::to_string(d.d) + "]";
  bench::emit_note(kTable, "rlx " + size + " weights fed: " + arena_note(g));
  bench::emit_note(kTable, "rlx " + size + " weights constant: " + arena_note(baked));
  struct Variant {
    const char* peer;
    const Graph* graph;
    std::vector<rlx::Buffer> leaves;
    std::shared_ptr<const rlx::Executable> exe;
  };
  std::vector<Variant> variants = {{"rlx", &g, {}, nullptr},
                                   {"rlx, weights constant", &baked, {}, nullptr}};
  for (Variant& v : variants) {
    for (const Node& n : v.graph->nodes())
      if (n.op.kind() == OpKind::Input || n.op.kind() == OpKind::Param)
        v.leaves.push_back(values.at(n.op.attrs<LeafAttrs>().name));
    v.exe = rlx::compile(*v.graph, rlx::Backend::Jit);
  }
  // Interleaved: both variants at one thread count, then the next.
  { // Memory (issue 26): the JIT's plan's arena against the liveness lower bound (the most
    // bytes of arena values live at one step, each rounded up to the plan's alignment), and the
    // process's resident memory after one run (VmRSS) and at its peak so far (VmHWM).
    constexpr char kMemory[] = "bert layer memory";
    rlx::ir::LirModule lir = rlx::plan_for(g, rlx::Backend::Jit);
    const rlx::ir::Memory& mem = lir.memory;
    std::vector<uint64_t> live(lir.steps.size() + 1, 0);
    for (std::size_t i = 0; i < mem.places.size(); ++i) {
      if (mem.places[i].home != rlx::ir::Home::Arena) continue;
      uint64_t bytes = uint64_t(lir.mir.nodes()[i].shape.size_bytes().value_or(0));
      bytes = (bytes + mem.alignment - 1) / mem.alignment * mem.alignment;
      for (uint32_t t = mem.lifetimes[i].first; t <= mem.lifetimes[i].last && t < live.size(); ++t)
        live[t] += bytes;
    }
    uint64_t bound = *std::max_element(live.begin(), live.end());
    std::vector<const rlx::Buffer*> ptrs;
    for (const rlx::Buffer& b : variants[0].leaves) ptrs.push_back(&b);
    bench::clobber(variants[0].exe->run(ptrs)[0].bytes().data());
    auto status_mib = [](const std::string& key) {
      std::ifstream in("/proc/self/status");
      std::string line;
      while (std::getline(in, line))
        if (line.rfind(key, 0) == 0) return std::strtod(line.c_str() + key.size(), nullptr) / 1024;
      return 0.0;
    };
    const double mib = 1024.0 * 1024.0;
    const int64_t size = d.b * d.s;
    bench::emit_value({kMemory, "arena (the JIT's plan)", 1, size, false, "MiB"},
                      double(mem.arena_size) / mib);
    bench::emit_value({kMemory, "liveness lower bound", 1, size, false, "MiB"},
                      double(bound) / mib);
    bench::emit_value({kMemory, "every value its own slot", 1, size, false, "MiB"},
                      double(mem.naive_size) / mib);
    bench::emit_value({kMemory, "RSS after one run (VmRSS)", 1, size, false, "MiB"},
                      status_mib("VmRSS:"));
    bench::emit_value({kMemory, "peak RSS so far (VmHWM)", 1, size, false, "MiB"},
                      status_mib("VmHWM:"));
  }
  for (int threads : args.threads) {
    rlx::set_num_threads(threads);
    for (const Variant& v : variants) {
      std::vector<const rlx::Buffer*> ptrs;
      for (const rlx::Buffer& b : v.leaves) ptrs.push_back(&b);
      bench::Stats s =
          bench::measure([&] { bench::clobber(v.exe->run(ptrs)[0].bytes().data()); }, budget);
      bench::emit_time({kTable, v.peer, threads, d.b * d.s, v.graph == &g}, s);
    }
  }
  bench::emit_note(kTable, "rlx " + size + " after its runs: " + rss_note());
}

} // namespace

int main(int argc, char** argv) {
  bench::Args args = bench::parse_args(argc, argv, {});
  const bench::Budget budget = bench::budget_of(args);
  bench::emit_note(kTable, "post-LN BERT encoder layer, 12 heads, erf GELU, padding mask, "
                           "forward; size = batch x sequence: 60 = [4,15,384] (FFN 1536), "
                           "1024 = [8,128,768] (FFN 3072)");
  bench::emit_note(kTable, "rlx: the compile pipeline with every fusion on (four "
                           "fused_matmul_bias_act, two fused residual norms), then the JIT");
  run({4, 15, 384, 12, 1536}, args, budget);
  run({8, 128, 768, 12, 3072}, args, budget);
  return 0;
}
