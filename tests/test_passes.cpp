// tests/test_passes.cpp -- golden text tests of the passes: tests/passes/<pass>/*.rlx hold cases
// of input text IR and the text the pass must turn it into (format: tests/passes/README.md).
// UPDATE_GOLDEN=1 rewrites the expected parts with what the passes print now.
#include "support/pass_check.hpp"
#include "support/random_graph.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace rlx;
using namespace rlx::test;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kCaseMarker = "// =====";
constexpr std::string_view kExpectMarker = "// ----- expect";
constexpr std::string_view kOptionPrefix = "// option ";

fs::path golden_root() { return fs::path(RLX_SOURCE_DIR) / "tests" / "passes"; }

/// One case of a golden file.
struct Case {
  std::string title;       ///< the text after the case marker
  std::string input;       ///< text IR, with its option lines
  std::string expect;      ///< after the expect marker's line: text IR, or "" (see below)
  std::string expect_line; ///< the expect marker's line: "// ----- expect", "... : unchanged"
                           ///< or "... error: <part of the message>"
  int line = 0;            ///< of the case marker
};

struct GoldenFile {
  fs::path path;
  std::string header; ///< the lines before the first case
  std::vector<Case> cases;
};

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

GoldenFile read_golden(const fs::path& path) {
  GoldenFile f{path, "", {}};
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  std::string line;
  int number = 0;
  bool in_expect = false;
  while (std::getline(in, line)) {
    ++number;
    if (starts_with(line, kCaseMarker)) {
      f.cases.push_back(Case{trim(line.substr(kCaseMarker.size())), "", "", "", number});
      in_expect = false;
    } else if (f.cases.empty()) {
      f.header += line + "\n";
    } else if (starts_with(line, kExpectMarker)) {
      REQUIRE_MESSAGE(!in_expect, path << ":" << number << ": a second expect marker");
      f.cases.back().expect_line = trim(line);
      in_expect = true;
    } else {
      (in_expect ? f.cases.back().expect : f.cases.back().input) += line + "\n";
    }
  }
  for (const Case& c : f.cases)
    REQUIRE_MESSAGE(!c.expect_line.empty(),
                    path << ":" << c.line << ": case '" << c.title << "' has no expect marker");
  return f;
}

/// "// ----- expect: unchanged" -> "unchanged"; "// ----- expect" -> "".
std::string expect_kind(const Case& c) {
  std::string rest = trim(c.expect_line.substr(kExpectMarker.size()));
  if (starts_with(rest, ":")) rest = trim(rest.substr(1));
  return rest;
}

/// A buffer from an option's "[d0, d1] dtype = v0 v1 ..." or "= v0 v1 ..." (shape of `like`).
Buffer option_buffer(std::string spec, const ir::Shape& like) {
  ir::Shape shape = like;
  std::size_t eq = spec.find('=');
  REQUIRE_MESSAGE(eq != std::string::npos, "option value without '=': " << spec);
  std::string type = trim(spec.substr(0, eq));
  if (!type.empty()) {
    std::size_t close = type.find(']');
    bool bracketed = type.front() == '[' && close != std::string::npos;
    REQUIRE_MESSAGE(bracketed, "bad shape: " << type);
    std::vector<int64_t> dims;
    std::stringstream ds(type.substr(1, close - 1));
    for (std::string d; std::getline(ds, d, ',');)
      if (!trim(d).empty()) dims.push_back(std::stoll(d));
    std::optional<ir::DType> t = ir::parse_dtype(trim(type.substr(close + 1)));
    REQUIRE_MESSAGE(t.has_value(), "bad dtype in " << type);
    shape = ir::Shape::of(dims, *t);
  }
  std::vector<double> values;
  std::stringstream vs(spec.substr(eq + 1));
  for (std::string v; vs >> v;) values.push_back(std::stod(v));
  REQUIRE_MESSAGE(int64_t(values.size()) == shape.num_elements().value_or(-1),
                  values.size() << " values for " << ir::short_str(shape));
  return Buffer::from_f64(shape, values);
}

/// The pass options a case's `// option` lines set: `fold_max_elements = N` and
/// `param NAME [shape dtype] = values...`.
passes::PassOptions case_options(const Case& c, const ir::Graph& g) {
  passes::PassOptions opts;
  std::stringstream in(c.input);
  for (std::string line; std::getline(in, line);) {
    if (!starts_with(line, kOptionPrefix)) continue;
    std::stringstream words(line.substr(kOptionPrefix.size()));
    std::string key;
    words >> key;
    std::string rest;
    std::getline(words, rest);
    if (key == "fold_max_elements") {
      opts.fold_max_elements = std::stoll(trim(rest.substr(rest.find('=') + 1)));
    } else if (key == "param") {
      std::stringstream r(rest);
      std::string name;
      r >> name;
      std::string spec;
      std::getline(r, spec);
      std::optional<ir::NodeId> id = g.param_id(name);
      ir::Shape like = id ? g.shape(*id) : ir::Shape::scalar(ir::DType::F32);
      opts.params[name] = option_buffer(spec, like);
    } else {
      FAIL("unknown option '" << key << "' in: " << line);
    }
  }
  return opts;
}

/// Values for g's leaves: with `edges`, every float edge value (NaN, infinities, signed zeros,
/// ...) and integer extremes; else ordinary values (uniform floats, small integers), where
/// sums and products stay finite. Params given in opts get those values. None when g has
/// dynamic dims (the interpreter runs bound graphs only).
Feeds case_feeds(const ir::Graph& g, const passes::PassOptions& opts, bool edges) {
  if (g.has_dynamic_dims()) return {};
  Rng rng(7);
  std::vector<Buffer> leaves;
  for (ir::NodeId id : leaf_ids(g)) {
    const ir::Node& n = g.node(id);
    auto given = opts.params.find(n.op.attrs<ir::LeafAttrs>().name);
    if (n.op.kind() == ir::OpKind::Param && given != opts.params.end()) {
      leaves.push_back(given->second);
      continue;
    }
    ir::DType t = n.shape.dtype();
    FillSpec spec = ir::is_bool(t)    ? FillSpec{Fill::Bool, 0, 1}
                    : ir::is_float(t) ? FillSpec{edges ? Fill::Special : Fill::Uniform, -3, 3}
                                      : FillSpec{edges ? Fill::IntEdge : Fill::Integers, -5, 5};
    leaves.push_back(random_values(n.shape, spec, rng));
  }
  return feeds_by_name(g, leaves);
}

std::string canonical(const std::string& text, const std::string& where) {
  try {
    return ir::to_text(ir::parse_text(text, where));
  } catch (const Error& e) {
    FAIL_CHECK(where << ": the expected text does not parse: " << std::string(e.what()));
    return "";
  }
}

bool update_golden() {
  const char* v = std::getenv("UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

/// Runs one case; returns the expect part as the pass makes it now (for UPDATE_GOLDEN).
std::pair<std::string, std::string> run_case(const passes::PassInfo& pass, const GoldenFile& f,
                                             const Case& c) {
  std::string where = f.path.filename().string() + ":" + std::to_string(c.line);
  INFO(where << ": " << c.title);
  ir::Graph g = ir::parse_text(c.input, where);
  REQUIRE_NOTHROW(ir::verify(g));
  passes::PassOptions opts = case_options(c, g);
  std::string kind = expect_kind(c);
  if (starts_with(kind, "error")) {
    std::string part = trim(kind.substr(5));
    if (starts_with(part, ":")) part = trim(part.substr(1));
    try {
      pass.run(g, opts);
      FAIL_CHECK("expected an rlx::Error containing '" << part << "', got:\n" << ir::to_text(g));
    } catch (const Error& e) {
      INFO("message: " << e.what());
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
    return {c.expect_line, c.expect};
  }
  const ir::Graph input = g;
  PassCheck check =
      run_and_check(pass, g, opts, {case_feeds(input, opts, true), case_feeds(input, opts, false)});
  CHECK_MESSAGE(check.problems.empty(), check.problems);
  std::string got = ir::to_text(g);
  bool known = kind.empty() || kind == "unchanged";
  REQUIRE_MESSAGE(known, "unknown expect marker: " << c.expect_line);
  if (!update_golden()) {
    if (kind == "unchanged") {
      CHECK_MESSAGE(!check.changed, "the pass must not fire here, but made:\n" << got);
    } else {
      std::string want = canonical(c.expect, where);
      INFO("want:\n" << want << "got:\n" << got);
      CHECK(check.changed);
      CHECK(got == want);
    }
  }
  if (!check.changed) return {std::string(kExpectMarker) + ": unchanged", ""};
  return {std::string(kExpectMarker), got};
}

void write_golden(const GoldenFile& f,
                  const std::vector<std::pair<std::string, std::string>>& got) {
  std::ostringstream os;
  os << f.header;
  for (std::size_t i = 0; i < f.cases.size(); ++i) {
    const Case& c = f.cases[i];
    os << kCaseMarker << " " << c.title << "\n" << trim(c.input) << "\n" << got[i].first << "\n";
    if (std::string expect = trim(got[i].second); !expect.empty()) os << expect << "\n";
    if (i + 1 < f.cases.size()) os << "\n";
  }
  std::ofstream(f.path) << os.str();
}

std::vector<fs::path> golden_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".rlx") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

TEST_CASE("golden: each pass turns every case of tests/passes/<pass>/ into the expected text") {
  int cases = 0;
  for (const passes::PassInfo& pass : passes::kPasses) {
    for (const fs::path& path : golden_files(golden_root() / std::string(pass.name))) {
      GoldenFile f = read_golden(path);
      std::vector<std::pair<std::string, std::string>> got;
      for (const Case& c : f.cases) got.push_back(run_case(pass, f, c));
      cases += int(f.cases.size());
      if (update_golden()) {
        write_golden(f, got);
        MESSAGE("UPDATE_GOLDEN=1: rewrote " << path);
      }
    }
  }
  MESSAGE(cases << " golden cases");
  CHECK(cases > 0);
}

TEST_CASE("golden: every pass has at least four cases, some of which it must leave unchanged") {
  for (const passes::PassInfo& pass : passes::kPasses) {
    INFO("pass " << pass.name << " (tests/passes/" << pass.name << "/)");
    int fires = 0, must_not = 0;
    for (const fs::path& path : golden_files(golden_root() / std::string(pass.name)))
      for (const Case& c : read_golden(path).cases)
        (expect_kind(c) == "unchanged" ? must_not : fires) += 1;
    CHECK(fires + must_not >= 4);
    CHECK(fires >= 1);
    CHECK(must_not >= 1);
  }
}

TEST_CASE("golden: every folder of tests/passes is named after a pass of the catalogue") {
  for (const auto& e : fs::directory_iterator(golden_root())) {
    if (!e.is_directory()) continue;
    INFO(e.path());
    CHECK(passes::find_pass(e.path().filename().string()) != nullptr);
  }
}

TEST_CASE("golden: the case reader splits cases and knows their expectations") {
  fs::path tmp = fs::temp_directory_path() / "rlx_golden_reader_test.rlx";
  std::ofstream(tmp) << "// header line\n"
                        "// ===== first case\n"
                        "graph @a {\n  %0 = input(\"x\") : [2] f32\n  return %0\n}\n"
                        "// ----- expect: unchanged\n"
                        "\n"
                        "// ===== second case\n"
                        "// option fold_max_elements = 3\n"
                        "graph @b {\n  %0 = input(\"x\") : [2] f32\n  return %0\n}\n"
                        "// ----- expect\n"
                        "graph @b {\n  %0 = input(\"x\") : [2] f32\n  return %0\n}\n";
  GoldenFile f = read_golden(tmp);
  fs::remove(tmp);
  CHECK(f.header == "// header line\n");
  REQUIRE(f.cases.size() == 2);
  CHECK(f.cases[0].title == "first case");
  CHECK(expect_kind(f.cases[0]) == "unchanged");
  CHECK(f.cases[1].line == 9);
  CHECK(expect_kind(f.cases[1]).empty());
  CHECK(ir::parse_text(f.cases[1].expect).name == "b");
  CHECK(case_options(f.cases[1], ir::parse_text(f.cases[1].input)).fold_max_elements == 3);
}
