// tests/fuzz/fuzz_text.cpp -- libFuzzer target: the text IR parser never crashes, and whatever it
// accepts prints to text that parses back to the same text (a fixed point; compared as text since
// a NaN attribute never equals itself).
#include <rlx/ir/text.hpp>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    rlx::ir::Graph g = rlx::ir::parse_text(text);
    std::string printed = rlx::ir::to_text(g);
    if (rlx::ir::to_text(rlx::ir::parse_text(printed)) != printed) std::abort();
  } catch (const rlx::Error&) {
    // Malformed input is expected; an InternalError or a crash is a bug.
  }
  return 0;
}
