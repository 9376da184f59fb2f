// tools/rlx/run.cpp -- `rlx run FILE --in ... --out DIR`: bind, compile, run, write .npy outputs;
// or random inputs, timings and per-output statistics.
#include "args.hpp"
#include "commands.hpp"
#include "feeds.hpp"
#include "graph_file.hpp"

#include <rlx/error.hpp>
#include <rlx/io/npy.hpp>
#include <rlx/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

namespace rlx::cli {

namespace {

constexpr OptionSpec kRunOptions[] = {
    {"--help", false, false},   {"--in", true, true},
    {"--param", true, true},    {"--out", true, false},
    {"--backend", true, false}, {"--bind", true, true},
    {"--time", false, false},   {"--iterations", true, false},
    {"--warmup", true, false},  {"--random-inputs", false, false, true},
    {"--stats", false, false},
};

Backend parse_backend(const std::optional<std::string>& text) {
  if (!text) return default_backend();
  if (*text == "interp") return Backend::Interp;
  if (*text == "jit") return Backend::Jit;
  throw UsageError("--backend '" + *text + "': expected interp or jit");
}

/// A node label as a file name: characters outside [A-Za-z0-9_.-] become '_'.
std::string sanitize(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

void make_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(ErrorKind::Io, "--out ", dir, ": cannot create the directory: ", ec.message());
  if (!std::filesystem::is_directory(dir, ec))
    fail(ErrorKind::Io, "--out ", dir, ": not a directory");
}

/// .npy has no bf16: such outputs are written as f32 (with a note on stderr).
Buffer savable(const Buffer& b, std::string_view label) {
  if (b.dtype() != ir::DType::BF16) return b;
  std::cerr << "rlx: note: " << label << " is bf16, which .npy cannot hold; writing it as f32\n";
  std::vector<double> values = b.to_f64();
  return Buffer::from_f64(b.shape().with_dtype(ir::DType::F32), values);
}

/// Write out<i>.npy (and <name>.npy for labelled outputs) and print one line per output.
void write_outputs(const ir::Graph& g, const std::vector<Buffer>& outs, const std::string& dir) {
  // File name -> the output index that owns it; the out<i> names come first.
  std::map<std::string, std::size_t> owner;
  for (std::size_t i = 0; i < outs.size(); ++i) owner["out" + std::to_string(i) + ".npy"] = i;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    std::string label = "out" + std::to_string(i);
    Buffer b = savable(outs[i], label);
    std::vector<std::string> files{label + ".npy"};
    const std::optional<std::string>& name = g.node(g.outputs[i]).name;
    if (name && !name->empty()) {
      std::string file = sanitize(*name) + ".npy";
      auto [it, inserted] = owner.emplace(file, i);
      if (inserted)
        files.push_back(file);
      else if (g.outputs[it->second] != g.outputs[i])
        std::cerr << "rlx: warning: " << label << " is named \"" << *name << "\" but " << file
                  << " is taken by out" << it->second << "; writing " << label << ".npy only\n";
    }
    std::string line = label + " " + ir::short_str(outs[i].shape()) + " ->";
    for (std::size_t k = 0; k < files.size(); ++k) {
      std::string path = (std::filesystem::path(dir) / files[k]).string();
      io::save_npy(path, b);
      line += (k ? ", " : " ") + path;
    }
    std::cout << line << '\n';
  }
  std::cout.flush();
}

/// A number for people: up to 6 significant digits ("5", "2.23607", "1e-07", "nan").
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// One line per output: min, max, mean and population std of the elements that are not NaN (of
/// the real part for c64), and how many are NaN.
void print_stats(const std::vector<Buffer>& outs) {
  for (std::size_t i = 0; i < outs.size(); ++i) {
    std::vector<double> v = outs[i].to_f64();
    int64_t nans = 0, n = 0;
    double lo = NAN, hi = NAN, sum = 0;
    for (double x : v) {
      if (std::isnan(x)) {
        ++nans;
        continue;
      }
      lo = n == 0 ? x : std::min(lo, x);
      hi = n == 0 ? x : std::max(hi, x);
      sum += x;
      ++n;
    }
    double mean = n ? sum / double(n) : NAN, sq = 0;
    for (double x : v)
      if (!std::isnan(x)) sq += (x - mean) * (x - mean);
    double sd = n ? std::sqrt(sq / double(n)) : NAN;
    std::cout << "out" << i << " " << ir::short_str(outs[i].shape()) << ": min " << number(lo)
              << " max " << number(hi) << " mean " << number(mean) << " std " << number(sd)
              << " nan " << nans << '\n';
  }
}

/// Run `exe` warmup + iterations times; print min, median and max of the timed runs.
std::vector<Buffer> run_timed(const Executable& exe, std::span<const Buffer* const> leaves,
                              int64_t iterations, int64_t warmup) {
  for (int64_t i = 0; i < warmup; ++i) exe.run(leaves);
  std::vector<double> ms;
  std::vector<Buffer> outs;
  for (int64_t i = 0; i < iterations; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    outs = exe.run(leaves);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::size_t k = ms.size();
  double median = k % 2 ? ms[k / 2] : (ms[k / 2 - 1] + ms[k / 2]) / 2;
  std::cout << "time: min " << number(ms.front()) << " ms, median " << number(median) << " ms, max "
            << number(ms.back()) << " ms (" << iterations << " runs after " << warmup
            << " warm-up)\n";
  return outs;
}

} // namespace

int run_command(std::span<const std::string> args) {
  ParsedArgs a = parse_args(args, kRunOptions);
  if (a.has("--help")) {
    std::cout << command_usage("run");
    return 0;
  }
  if (a.positional.empty()) throw UsageError("missing the graph FILE");
  if (a.positional.size() > 1)
    throw UsageError("expected one graph FILE, got " + std::to_string(a.positional.size()) +
                     " operands (feeds need --in NAME=PATH)");
  std::optional<std::string> out_dir = a.value("--out");
  if (!out_dir && !a.has("--stats") && !a.has("--time"))
    throw UsageError("missing --out DIR (where the outputs are written), or --stats or --time");
  std::vector<Feed> feeds = parse_feeds(a.values("--in"), a.values("--param"));
  Backend backend = parse_backend(a.value("--backend"));
  for (std::string_view option : {"--iterations", "--warmup"})
    if (a.has(option) && !a.has("--time"))
      throw UsageError(std::string(option) + " needs --time (it sets how --time runs)");
  int64_t iterations =
      a.has("--iterations") ? parse_count("--iterations", *a.value("--iterations"), 1) : 10;
  int64_t warmup = a.has("--warmup") ? parse_count("--warmup", *a.value("--warmup"), 0) : 1;
  std::optional<uint64_t> stream;
  if (a.has("--random-inputs")) {
    std::string v = *a.value("--random-inputs");
    stream = v.empty() ? 0 : uint64_t(parse_count("--random-inputs", v, 0));
    if (a.has("--in"))
      throw UsageError("--random-inputs makes every input; it cannot be combined with --in");
  }

  const std::string& path = a.positional[0];
  interp::Feed model_params;
  ir::Graph g = load_graph(path, &model_params);
  verify_graph(g, path);
  for (auto& [name, value] : model_params) {
    bool given = std::any_of(feeds.begin(), feeds.end(),
                             [&](const Feed& f) { return f.is_param && f.name == name; });
    if (!given) feeds.push_back(Feed{true, name, "<" + path + " initializer>", value, true});
  }
  if (stream) {
    ir::DimBinding given =
        g.has_dynamic_dims() ? parse_bindings(g, a.values("--bind")) : ir::DimBinding{};
    for (Feed& f : random_feeds(g, feeds, given, *stream)) feeds.push_back(std::move(f));
  }
  std::vector<const Feed*> leaves = match_feeds(g, feeds);
  load_feeds(g, feeds);
  ir::Graph bound = g;
  if (g.has_dynamic_dims()) {
    ir::DimBinding binding = infer_binding(g, leaves, parse_bindings(g, a.values("--bind")));
    bound = bind_graph(g, binding, path);
  } else if (a.has("--bind")) {
    parse_bindings(g, a.values("--bind")); // names the option that binds nothing
  }
  check_feeds(bound, leaves);

  std::shared_ptr<const Executable> exe;
  try {
    exe = compile(bound, backend);
  } catch (const Error& e) {
    std::optional<std::string> chosen = a.value("--backend");
    throw Error(e.kind(), (chosen ? "--backend " + *chosen : path) + ": " + e.what());
  }
  std::vector<const Buffer*> buffers;
  for (const Feed* f : leaves) buffers.push_back(&f->buffer);
  std::vector<Buffer> outs;
  try {
    outs = a.has("--time") ? run_timed(*exe, buffers, iterations, warmup) : exe->run(buffers);
  } catch (const Error& e) {
    throw Error(e.kind(), detail::cat(path, ": ", e.what()));
  }
  if (a.has("--stats")) print_stats(outs);
  if (out_dir) {
    make_directory(*out_dir);
    write_outputs(bound, outs, *out_dir);
  }
  std::cout.flush();
  return 0;
}

} // namespace rlx::cli
