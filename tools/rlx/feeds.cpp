// tools/rlx/feeds.cpp -- `rlx run`'s --in/--param feeds: matching, loading, binding, checking.
#include "feeds.hpp"

#include "args.hpp"
#include "graph_file.hpp"

#include <rlx/error.hpp>
#include <rlx/io/npy.hpp>

#include <algorithm>
#include <map>

namespace rlx::cli {

namespace {

bool is_leaf(const ir::Node& n) { return ir::has_trait(n.op.kind(), ir::kFed); }
bool is_param(const ir::Node& n) { return n.op.kind() == ir::OpKind::Param; }
const std::string& leaf_name(const ir::Node& n) { return n.op.attrs<ir::LeafAttrs>().name; }
std::string_view kind_word(bool param) { return param ? "param" : "input"; }

/// `input "x" of graph @g`, for error messages.
std::string leaf_str(const ir::Graph& g, const ir::Node& n) {
  return detail::cat(kind_word(is_param(n)), " \"", leaf_name(n), "\" of graph @", g.name);
}

/// "x, y" (the names of the graph's inputs or params), or "none".
std::string leaf_names(const ir::Graph& g, bool param) {
  std::string out;
  for (const ir::Node& n : g.nodes())
    if (is_leaf(n) && is_param(n) == param) out += (out.empty() ? "" : ", ") + leaf_name(n);
  return out.empty() ? "none" : out;
}

/// The feed's dtype must be the leaf's (before and after binding).
void check_dtype(const ir::Graph& g, const ir::Node& n, const Feed& f) {
  ir::DType have = f.buffer.dtype();
  if (have != n.shape.dtype())
    fail(ErrorKind::Type, f.option(), ": dtype ", ir::dtype_name(have), " does not match ",
         leaf_str(g, n), ", which is ", ir::short_str(n.shape));
}

} // namespace

std::string Feed::option() const {
  if (preset && path == "<random>")
    return detail::cat("--random-inputs (", kind_word(is_param), " ", name, ")");
  return detail::cat(is_param ? "--param " : "--in ", name, "=", path);
}

std::vector<Feed> parse_feeds(std::span<const std::string> inputs,
                              std::span<const std::string> params) {
  std::vector<Feed> feeds;
  for (bool param : {false, true}) {
    std::string_view option = param ? "--param" : "--in";
    for (const std::string& v : param ? params : inputs) {
      auto [name, path] = split_assignment(option, v, "NAME=PATH");
      for (const Feed& f : feeds)
        if (f.is_param == param && f.name == name)
          throw UsageError(std::string(option) + " " + name + " is given more than once");
      feeds.push_back(Feed{param, std::move(name), std::move(path), {}});
    }
  }
  return feeds;
}

std::vector<const Feed*> match_feeds(const ir::Graph& g, std::span<const Feed> feeds) {
  for (const Feed& f : feeds) {
    if (f.is_param ? g.param_id(f.name) : g.input_id(f.name)) continue;
    if (f.is_param ? g.input_id(f.name) : g.param_id(f.name))
      fail(ErrorKind::Runtime, f.option(), ": \"", f.name, "\" is ",
           f.is_param ? "an input" : "a param", " of graph @", g.name, ", not a",
           f.is_param ? " param (use --in)" : "n input (use --param)");
    fail(ErrorKind::Runtime, f.option(), ": graph @", g.name, " has no ", kind_word(f.is_param),
         " named \"", f.name, "\" (its ", kind_word(f.is_param), "s: ", leaf_names(g, f.is_param),
         ")");
  }
  std::vector<const Feed*> leaves;
  std::string missing;
  for (const ir::Node& n : g.nodes()) {
    if (!is_leaf(n)) continue;
    const Feed* found = nullptr;
    for (const Feed& f : feeds)
      if (f.is_param == is_param(n) && f.name == leaf_name(n)) found = &f;
    if (found == nullptr)
      missing += detail::cat(missing.empty() ? "" : "; ", is_param(n) ? "--param " : "--in ",
                             leaf_name(n), "=FILE.npy for ", kind_word(is_param(n)), " \"",
                             leaf_name(n), "\" ", ir::short_str(n.shape));
    leaves.push_back(found);
  }
  if (!missing.empty()) fail(ErrorKind::Runtime, "graph @", g.name, " needs ", missing);
  return leaves;
}

void load_feeds(const ir::Graph& g, std::span<Feed> feeds) {
  for (Feed& f : feeds) {
    if (f.preset) continue;
    try {
      f.buffer = io::load_npy(f.path);
    } catch (const Error& e) {
      throw Error(e.kind(), f.option() + ": " + e.what());
    }
    auto id = f.is_param ? g.param_id(f.name) : g.input_id(f.name);
    if (id && g.shape(*id).dtype() == ir::DType::BF16 && f.buffer.dtype() == ir::DType::F32) {
      ir::Shape shape = f.buffer.shape().with_dtype(ir::DType::BF16);
      std::vector<double> values = f.buffer.to_f64();
      f.buffer = Buffer::from_f64(shape, values);
    }
  }
}

ir::DimBinding infer_binding(const ir::Graph& g, std::span<const Feed* const> leaves,
                             ir::DimBinding binding) {
  std::map<uint32_t, std::string> source;
  for (auto [s, size] : binding.entries())
    source[s] = detail::cat("--bind ", symbol_str(s).substr(1), "=", size);
  std::size_t next = 0;
  for (const ir::Node& n : g.nodes()) {
    if (!is_leaf(n)) continue;
    const Feed* f = leaves[next++];
    if (n.shape.is_static()) continue; // checked against the bound graph in check_feeds
    check_dtype(g, n, *f);
    const ir::Shape& have = f->buffer.shape();
    if (have.rank() != n.shape.rank())
      fail(ErrorKind::Shape, f->option(), ": shape ", ir::short_str(have), " does not fit ",
           leaf_str(g, n), ", ", ir::short_str(n.shape), " (rank ", have.rank(), " vs ",
           n.shape.rank(), ")");
    for (std::size_t j = 0; j < have.rank(); ++j) {
      const ir::Dim& d = n.shape.dims()[j];
      if (d.is_static()) continue;
      int64_t size = have.dims()[j].size();
      if (auto old = binding.get(d.symbol())) {
        if (*old != size)
          fail(ErrorKind::Bind, f->option(), ": dim ", j, " (", symbol_str(d.symbol()), ") is ",
               size, " but ", source[d.symbol()], " gave ", symbol_str(d.symbol()), " = ", *old);
        continue;
      }
      binding.set(d.symbol(), size);
      source[d.symbol()] = f->option();
    }
  }
  std::vector<uint32_t> used = g.dynamic_symbols();
  auto uses = [&](uint32_t s) { return std::find(used.begin(), used.end(), s) != used.end(); };
  if (uses(ir::sym::kRows) && !binding.get(ir::sym::kRows)) {
    auto batch = binding.get(ir::sym::kBatch), seq = binding.get(ir::sym::kSeq);
    if (batch && seq) binding.set(ir::sym::kRows, *batch * *seq);
  }
  std::string unbound;
  for (uint32_t s : used)
    if (!binding.get(s)) unbound += (unbound.empty() ? "" : ", ") + symbol_str(s);
  if (!unbound.empty())
    fail(ErrorKind::Bind, "graph @", g.name,
         " has dynamic dims that no fed tensor determines: ", unbound,
         "; pass --bind NAME=SIZE for each");
  return binding;
}

namespace {

/// SplitMix64's finalizer: a well-mixed 64-bit function of its counter.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Uniform in [-1, 1) from 53 bits of `bits`.
double unit(uint64_t bits) { return double(bits >> 11) * 0x1.0p-52 - 1.0; }

Buffer random_buffer(const ir::Shape& shape, uint64_t key) {
  Buffer b(shape);
  const int64_t n = b.numel();
  const ir::DType dt = shape.dtype();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = mix(key ^ mix(uint64_t(i)));
    if (dt == ir::DType::C64)
      b.set_c64(i, {float(unit(bits)), float(unit(mix(bits)))});
    else if (dt == ir::DType::Bool)
      b.set_i64(i, int64_t(bits >> 63));
    else if (ir::is_float(dt))
      b.set_f64(i, unit(bits));
    else
      b.set_i64(i, int64_t((bits >> 32) % 10));
  }
  return b;
}

} // namespace

std::vector<Feed> random_feeds(const ir::Graph& g, std::span<const Feed> feeds,
                               ir::DimBinding binding, uint64_t stream) {
  if (!binding.get(ir::sym::kRows)) {
    auto batch = binding.get(ir::sym::kBatch), seq = binding.get(ir::sym::kSeq);
    if (batch && seq) binding.set(ir::sym::kRows, *batch * *seq);
  }
  std::vector<Feed> out;
  uint64_t leaf = 0;
  for (const ir::Node& n : g.nodes()) {
    if (!is_leaf(n)) continue;
    ++leaf;
    bool fed = std::any_of(feeds.begin(), feeds.end(), [&](const Feed& f) {
      return f.is_param == is_param(n) && f.name == leaf_name(n);
    });
    if (fed) continue;
    ir::Shape shape = n.shape.bind(binding);
    for (const ir::Dim& d : shape.dims())
      if (d.is_dynamic())
        fail(ErrorKind::Bind, "--random-inputs: ", leaf_str(g, n), " has the dynamic dim ",
             symbol_str(d.symbol()), " (", ir::short_str(n.shape), "); give its size with --bind ",
             symbol_str(d.symbol()).substr(1), "=SIZE");
    // One stream per leaf (by position), so adding a leaf does not change the others' values.
    Buffer values = random_buffer(shape, mix(stream) ^ mix(leaf << 32));
    out.push_back(Feed{is_param(n), leaf_name(n), "<random>", std::move(values), true});
  }
  return out;
}

void check_feeds(const ir::Graph& g, std::span<const Feed* const> leaves) {
  std::size_t next = 0;
  for (const ir::Node& n : g.nodes()) {
    if (!is_leaf(n)) continue;
    const Feed* f = leaves[next++];
    check_dtype(g, n, *f);
    const ir::Shape& have = f->buffer.shape();
    if (have != n.shape)
      fail(ErrorKind::Shape, f->option(), ": shape ", ir::short_str(have), " does not match ",
           leaf_str(g, n), ", which expects ", ir::short_str(n.shape));
  }
}

} // namespace rlx::cli
