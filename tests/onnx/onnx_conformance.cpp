// tests/onnx/onnx_conformance.cpp -- the ONNX node test suite through rlx::onnx::load: each
// in-scope test's model is imported, run on the interpreter and on the JIT, and compared with
// the expected outputs (ONNX's tolerances, rtol 1e-3 and atol 1e-7). Tests outside rlx's scope
// are listed with the reason. Prints a table by op type and a closing "N passed, N failed" line.
//
//   onnx_conformance DATA_DIR BASELINE [--update] [--filter SUBSTRING] [--verbose]
//
// Fails (exit 1) when a test listed in BASELINE (one test name a line) does not pass, so the
// pass count cannot fall unnoticed; --update rewrites BASELINE with the tests that pass now.
#include <rlx/interp.hpp>
#include <rlx/io/npy.hpp>
#include <rlx/onnx.hpp>
#include <rlx/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using rlx::Buffer;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Why a test is out of scope, from its op types and value types; "" when it is in scope.
std::string skip_reason(const rlx::onnx::ModelSummary& s, const std::set<std::string>& supported) {
  static const std::map<std::string, std::string> kCategory = {
      {"If", "control flow"},
      {"SequenceInsert", "sequences"},
      {"SequenceAt", "sequences"},
      {"SequenceEmpty", "sequences"},
      {"SequenceConstruct", "sequences"},
      {"SequenceErase", "sequences"},
      {"SequenceLength", "sequences"},
      {"SequenceMap", "sequences"},
      {"SplitToSequence", "sequences"},
      {"ConcatFromSequence", "sequences"},
      {"Optional", "optionals"},
      {"OptionalGetElement", "optionals"},
      {"OptionalHasElement", "optionals"},
      {"StringNormalizer", "strings"},
      {"TfIdfVectorizer", "strings"},
      {"Bernoulli", "randomness"},
      {"RandomNormal", "randomness"},
      {"RandomNormalLike", "randomness"},
      {"RandomUniform", "randomness"},
      {"RandomUniformLike", "randomness"},
      {"Multinomial", "randomness"},
      {"Adagrad", "training op"},
      {"Adam", "training op"},
      {"Momentum", "training op"},
      {"Gradient", "training op"},
  };
  for (const std::string& t : s.io_types) {
    if (t == "tensor(STRING)") return "strings";
    if (t == "sequence") return "sequences";
    if (t == "optional") return "optionals";
    if (t != "tensor(FLOAT)" && t.starts_with("tensor(") &&
        (t == "tensor(UINT16)" || t == "tensor(UINT64)" || t == "tensor(COMPLEX128)"))
      return "dtype " + t.substr(7, t.size() - 8) + " (rlx has no such dtype)";
  }
  for (const rlx::onnx::NodeSummary& n : s.nodes) {
    if (auto it = kCategory.find(n.op_type); it != kCategory.end()) return it->second;
    if (n.op_type == "Dropout" && n.inputs.size() >= 3 && !n.inputs[2].empty())
      return "randomness (training-mode Dropout)";
    if (!n.domain.empty()) return "domain " + n.domain;
  }
  for (const rlx::onnx::NodeSummary& n : s.nodes)
    if (!supported.contains(n.op_type)) return "no rlx mapping for " + n.op_type;
  return "";
}

/// "" when `got` matches `want` within ONNX's tolerances, else what differs.
std::string compare(const Buffer& got, const Buffer& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "result " + rlx::ir::short_str(got.shape()) + " vs expected " +
           rlx::ir::short_str(want.shape());
  bool exact = !rlx::ir::is_float(want.dtype()) && !rlx::ir::is_complex(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (exact) {
      if (got.get_i64(i) != want.get_i64(i))
        return "element " + std::to_string(i) + ": " + std::to_string(got.get_i64(i)) +
               " vs expected " + std::to_string(want.get_i64(i));
      continue;
    }
    double g = got.get_f64(i), w = want.get_f64(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (g == w) continue; // infinities
    if (!(std::abs(g - w) <= 1e-7 + 1e-3 * std::abs(w))) {
      std::ostringstream os;
      os << "element " << i << ": " << std::setprecision(9) << g << " vs expected " << w;
      return os.str();
    }
  }
  return "";
}

struct Outcome {
  enum Kind { Pass, Fail, Skip } kind = Fail;
  std::string reason;
};

Outcome run_test(const fs::path& dir) {
  std::string bytes = read_file(dir / "model.onnx");
  rlx::onnx::ModelSummary summary;
  try {
    summary = rlx::onnx::summarize(bytes, (dir / "model.onnx").string());
  } catch (const rlx::Error& e) {
    if (e.kind() == rlx::ErrorKind::Unsupported) return {Outcome::Skip, e.what()};
    return {Outcome::Fail, e.what()};
  }
  static const std::set<std::string> supported = [] {
    std::vector<std::string> v = rlx::onnx::supported_ops();
    return std::set<std::string>(v.begin(), v.end());
  }();
  if (std::string why = skip_reason(summary, supported); !why.empty()) return {Outcome::Skip, why};

  fs::path data = dir / "test_data_set_0";
  std::vector<std::pair<std::string, Buffer>> inputs;
  std::vector<Buffer> expected;
  try {
    for (int i = 0; fs::exists(data / ("input_" + std::to_string(i) + ".pb")); ++i) {
      std::string name;
      Buffer b =
          rlx::onnx::load_tensor((data / ("input_" + std::to_string(i) + ".pb")).string(), &name);
      inputs.emplace_back(name, std::move(b));
    }
    for (int i = 0; fs::exists(data / ("output_" + std::to_string(i) + ".pb")); ++i)
      expected.push_back(
          rlx::onnx::load_tensor((data / ("output_" + std::to_string(i) + ".pb")).string()));
  } catch (const rlx::Error& e) {
    return {Outcome::Skip, std::string("test data: ") + e.what()};
  }
  try {
    rlx::onnx::LoadOptions opts;
    for (const auto& [name, b] : inputs) opts.input_values[name] = b;
    rlx::onnx::Model m = rlx::onnx::parse_model(bytes, "model.onnx", opts);
    // Bind dynamic dims from the fed shapes.
    rlx::ir::DimBinding binding;
    rlx::interp::Feed feed;
    std::vector<const Buffer*> leaves;
    for (const rlx::ir::Node& n : m.graph.nodes()) {
      if (n.op.kind() == rlx::ir::OpKind::Param) {
        leaves.push_back(&m.params.at(n.op.attrs<rlx::ir::LeafAttrs>().name));
        continue;
      }
      if (n.op.kind() != rlx::ir::OpKind::Input) continue;
      const std::string& name = n.op.attrs<rlx::ir::LeafAttrs>().name;
      auto it =
          std::find_if(inputs.begin(), inputs.end(), [&](auto& p) { return p.first == name; });
      if (it == inputs.end()) return {Outcome::Fail, "no test data for input " + name};
      if (it->second.shape().rank() == n.shape.rank())
        for (std::size_t k = 0; k < n.shape.rank(); ++k)
          if (n.shape.dims()[k].is_dynamic())
            binding.set(n.shape.dims()[k].symbol(), it->second.shape().dims()[k].size());
      feed[name] = it->second;
      leaves.push_back(&it->second);
    }
    rlx::ir::Graph g = m.graph.has_dynamic_dims() ? m.graph.bind(binding) : m.graph;
    if (g.outputs.size() != expected.size())
      return {Outcome::Fail, std::to_string(g.outputs.size()) + " outputs, expected " +
                                 std::to_string(expected.size())};
    std::vector<Buffer> by_interp = rlx::interp::run(g, feed, m.params);
    for (std::size_t i = 0; i < expected.size(); ++i)
      if (std::string d = compare(by_interp[i], expected[i]); !d.empty())
        return {Outcome::Fail, "interp output " + std::to_string(i) + ": " + d};
    std::vector<Buffer> by_jit = rlx::compile(g, rlx::Backend::Jit)->run(leaves);
    for (std::size_t i = 0; i < expected.size(); ++i)
      if (std::string d = compare(by_jit[i], expected[i]); !d.empty())
        return {Outcome::Fail, "jit output " + std::to_string(i) + ": " + d};
  } catch (const rlx::Error& e) {
    return {Outcome::Fail, e.what()};
  } catch (const std::exception& e) {
    return {Outcome::Fail, std::string("internal error: ") + e.what()};
  }
  return {Outcome::Pass, ""};
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: onnx_conformance DATA_DIR BASELINE [--update] [--filter S] [--verbose]\n";
    return 2;
  }
  fs::path data_dir = argv[1], baseline_path = argv[2];
  bool update = false, verbose = false;
  std::string filter;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--update")
      update = true;
    else if (a == "--verbose")
      verbose = true;
    else if (a == "--filter" && i + 1 < argc)
      filter = argv[++i];
  }
  if (!fs::is_directory(data_dir)) {
    std::cerr << "onnx_conformance: no test data at " << data_dir
              << " (apt-get install libonnx-testdata)\n";
    return 77; // meson: skipped
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(data_dir))
    if (e.is_directory() && e.path().filename().string().find(filter) != std::string::npos)
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());

  auto t0 = std::chrono::steady_clock::now();
  struct Row {
    int pass = 0, fail = 0, skip = 0;
  };
  std::map<std::string, Row> table;
  std::vector<std::pair<std::string, std::string>> failures, skips;
  std::set<std::string> passed;
  int single_pass = 0, single_fail = 0;
  for (const fs::path& dir : dirs) {
    std::string name = dir.filename().string();
    Outcome o = run_test(dir);
    std::string op = "(unreadable)";
    std::size_t nodes = 0;
    try {
      rlx::onnx::ModelSummary s = rlx::onnx::summarize(read_file(dir / "model.onnx"));
      nodes = s.nodes.size();
      op = nodes == 1 ? s.nodes[0].op_type : "(graphs of several nodes)";
    } catch (const rlx::Error&) {
    }
    Row& row = table[op];
    if (o.kind == Outcome::Pass) {
      ++row.pass, passed.insert(name);
      if (nodes == 1) ++single_pass;
    } else if (o.kind == Outcome::Fail) {
      ++row.fail, failures.emplace_back(name, o.reason);
      if (nodes == 1) ++single_fail;
    } else {
      ++row.skip, skips.emplace_back(name, o.reason);
    }
    if (verbose)
      std::cout << name << ": "
                << (o.kind == Outcome::Pass   ? "pass"
                    : o.kind == Outcome::Fail ? "FAIL"
                                              : "skip")
                << (o.reason.empty() ? "" : " - " + o.reason) << "\n";
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::cout << "| op type | passed | failed | skipped |\n|---|---|---|---|\n";
  for (const auto& [op, row] : table)
    std::cout << "| " << op << " | " << row.pass << " | " << row.fail << " | " << row.skip
              << " |\n";
  std::cout << "\nskipped (out of scope):\n";
  for (const auto& [name, why] : skips) std::cout << "  " << name << ": " << why << "\n";
  std::cout << "\nfailed:\n";
  for (const auto& [name, why] : failures) std::cout << "  " << name << ": " << why << "\n";

  // The baseline: every test it lists must pass.
  std::set<std::string> baseline;
  {
    std::ifstream in(baseline_path);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') baseline.insert(line);
  }
  int status = 0;
  if (update) {
    std::ofstream out(baseline_path);
    out << "# ONNX node tests that pass through rlx::onnx (tests/onnx/onnx_conformance.cpp "
           "--update writes this)\n";
    for (const std::string& n : passed) out << n << "\n";
    std::cout << "\nwrote " << passed.size() << " names to " << baseline_path << "\n";
  } else if (filter.empty()) {
    std::vector<std::string> regressed, fresh;
    for (const std::string& n : baseline)
      if (!passed.contains(n)) regressed.push_back(n);
    for (const std::string& n : passed)
      if (!baseline.contains(n)) fresh.push_back(n);
    if (fresh.size() <= 20 || verbose)
      for (const std::string& n : fresh)
        std::cout << "newly passing (not in the baseline): " << n << "\n";
    else
      std::cout << fresh.size()
                << " tests pass that the baseline does not list (--update adds them)\n";
    for (const std::string& n : regressed)
      std::cout << "REGRESSED (in the baseline): " << n << "\n";
    if (!regressed.empty() || baseline.empty()) status = 1;
  }
  int in_scope = int(passed.size() + failures.size());
  std::cout << "\n"
            << dirs.size() << " node tests: " << in_scope << " in scope, " << skips.size()
            << " skipped; single-node tests in scope: " << single_pass << " of "
            << single_pass + single_fail << " pass (" << std::fixed << std::setprecision(1)
            << (single_pass + single_fail ? 100.0 * single_pass / (single_pass + single_fail) : 0.0)
            << "%); " << secs << " s\n";
  std::cout << passed.size() << " passed, " << failures.size() << " failed\n";
  return status;
}
