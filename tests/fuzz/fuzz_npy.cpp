// tests/fuzz/fuzz_npy.cpp -- libFuzzer target: the .npy reader never crashes, and whatever it
// accepts writes back to .npy bytes that read to the same buffer (dtype, shape and data bytes).
#include <rlx/error.hpp>
#include <rlx/io/npy.hpp>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    rlx::Buffer b = rlx::io::read_npy(bytes);
    if (rlx::io::read_npy(rlx::io::write_npy(b)) != b) std::abort();
  } catch (const rlx::Error&) {
    // Malformed input is expected; an InternalError or a crash is a bug.
  }
  return 0;
}
