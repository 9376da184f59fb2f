// tests/support/fixture_dirs.hpp -- the op fixture case folders: tests/fixtures/ops/<case>/ made
// by make_ops.py, and tests/fixtures/ops_<family>/<case>/ made by each family's own script
// (make_<family>.py), so no script deletes another's cases.
#pragma once

#include <rlx/error.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace rlx::test {

/// Every case folder, sorted by path.
inline std::vector<std::filesystem::path> op_fixture_case_dirs() {
  namespace fs = std::filesystem;
  fs::path root = fs::path(RLX_SOURCE_DIR) / "tests" / "fixtures";
  std::vector<fs::path> dirs;
  for (const auto& group : fs::directory_iterator(root)) {
    std::string name = group.path().filename().string();
    if (!group.is_directory() || (name != "ops" && name.rfind("ops_", 0) != 0)) continue;
    for (const auto& e : fs::directory_iterator(group.path()))
      if (e.is_directory()) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

/// The whole of a fixture's text file (graph.rlx, tol.txt); an rlx::Error when it cannot be read.
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(ErrorKind::Io, "cannot read ", p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace rlx::test
