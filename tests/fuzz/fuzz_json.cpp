// tests/fuzz/fuzz_json.cpp -- libFuzzer target: the JSON graph reader never crashes, and whatever
// it accepts writes JSON that reads back to the same JSON (compared as text: NaN != NaN).
#include <rlx/ir/json.hpp>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    rlx::ir::Graph g = rlx::ir::from_json(text);
    std::string json = rlx::ir::to_json(g);
    if (rlx::ir::to_json(rlx::ir::from_json(json)) != json) std::abort();
  } catch (const rlx::Error&) {
  }
  return 0;
}
