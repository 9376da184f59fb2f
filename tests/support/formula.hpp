// tests/support/formula.hpp -- weights given by a formula that the fixture scripts evaluate too
// (tests/fixtures/make_bert.py, make_llama.py), so only the expected outputs are committed.
#pragma once

#include <rlx/interp.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace rlx::test {

/// value[k] = offset + scale * sin(freq * k + phase): the sine computed in double and rounded to
/// f32, then the offset added in double and rounded again (the scripts' "+ 1.0" on norm gains).
struct Formula {
  const char* name;
  std::vector<int64_t> dims;
  double scale, freq, phase, offset;
};

inline Buffer formula(const Formula& f) {
  Buffer b(ir::Shape::of(f.dims, ir::DType::F32));
  for (int64_t k = 0; k < b.numel(); ++k) {
    float v = static_cast<float>(f.scale * std::sin(f.freq * double(k) + f.phase));
    b.set_f64(k, f.offset == 0 ? double(v) : double(float(f.offset + double(v))));
  }
  return b;
}

} // namespace rlx::test
