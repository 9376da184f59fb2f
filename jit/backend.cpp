// jit/backend.cpp -- the JIT as a compiling backend of the runtime (src/runtime/backend.hpp):
// registered as the program starts.
#include "debug.hpp"
#include "gemm.hpp"
#include "steps.hpp"

#include "runtime/backend.hpp"

namespace rlx::jit {

namespace {

class JitBackend final : public runtime::CompilingBackend {
public:
  Backend kind() const override { return Backend::Jit; }
  /// Where the JIT's GEMM runs, convolutions become products and a product's bias and
  /// activation go into the GEMM's store (the interpreter keeps the unfused reference forms).
  passes::PipelineOptions pipeline_options() const override {
    passes::PipelineOptions opts;
    opts.conv_as_matmul = gemm_supported();
    opts.fuse.matmul_bias_act = gemm_supported();
    return opts;
  }
  ir::PlanOptions plan_options() const override { return jit::plan_options(); }
  std::shared_ptr<const Executable> compile(ir::LirModule lir) const override {
    return compile_lir(std::move(lir));
  }
  void add_stats(CacheStats& stats) const override { add_kernel_stats(stats); }
};

const JitBackend kJit;

} // namespace

} // namespace rlx::jit

/// Registered as the program starts. Programs link this object through -u rlx_jit_registered
/// (rlx_dep in meson.build): nothing else refers to it.
extern "C" {
extern const bool rlx_jit_registered;
const bool rlx_jit_registered = rlx::runtime::register_backend(rlx::jit::kJit);
}
