// tests/support/packed_cases.hpp -- the packed quantization schemes the packed suite runs
// (tests/test_packed.cpp, tests/test_packed_grad.cpp), each under the name of its fixture case
// folder written by tests/fixtures/make_packed.py.
#pragma once

#include <rlx/quant_packed.hpp>

#include <string>
#include <vector>

namespace rlx::test {

struct PackedCase {
  std::string name;
  quant::QuantScheme scheme;
};

/// Every block format, in its packed (one-operand) form.
inline const std::vector<PackedCase>& packed_cases() {
  using quant::QuantFormat;
  using quant::QuantScheme;
  static const std::vector<PackedCase> cases = {
      {"Q4_0", QuantScheme::of(QuantFormat::Q4_0)},
      {"Q4_1", QuantScheme::of(QuantFormat::Q4_1)},
      {"Q5_0", QuantScheme::of(QuantFormat::Q5_0)},
      {"Q5_1", QuantScheme::of(QuantFormat::Q5_1)},
      {"Q8_0", QuantScheme::of(QuantFormat::Q8_0)},
      {"Q2_K", QuantScheme::of(QuantFormat::Q2_K)},
      {"Q3_K", QuantScheme::of(QuantFormat::Q3_K)},
      {"Q4_K", QuantScheme::of(QuantFormat::Q4_K)},
      {"Q5_K", QuantScheme::of(QuantFormat::Q5_K)},
      {"Q6_K", QuantScheme::of(QuantFormat::Q6_K)},
      {"Q8_K", QuantScheme::of(QuantFormat::Q8_K)},
      {"Int8Block_32", QuantScheme::int8_block(32)},
      {"Int8BlockAsym_16", QuantScheme::int8_block_asym(16)},
      {"Int4Block_32", QuantScheme::int4_block(32)},
      {"Fp8E4m3", QuantScheme::of(QuantFormat::Fp8E4m3)},
      {"Fp8E5m2", QuantScheme::of(QuantFormat::Fp8E5m2)},
      {"Nvfp4Block", QuantScheme::of(QuantFormat::Nvfp4Block)},
  };
  return cases;
}

/// The split forms: the codes and their scales (and zero points) as separate operands.
inline const std::vector<PackedCase>& split_cases() {
  using quant::QuantFormat;
  using quant::QuantScheme;
  static const std::vector<PackedCase> cases = {
      {"split_int8", QuantScheme::int8_block(32)},
      {"split_int8_asym", QuantScheme::int8_block_asym(16)},
      {"split_int4", QuantScheme::int4_block(32)},
      {"split_fp8_e4m3", QuantScheme::of(QuantFormat::Fp8E4m3)},
      {"split_fp8_e5m2", QuantScheme::of(QuantFormat::Fp8E5m2)},
  };
  return cases;
}

} // namespace rlx::test
