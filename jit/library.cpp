// jit/library.cpp -- the registry of native runtime kernels (jit/library.hpp): one table, in
// the order entries are asked. FFTW runs fft nodes (jit/fftw_kernels.cpp), attention
// runs on the GEMM (jit/attention.cpp), lstm/gru/rnn too (jit/recurrent_step.cpp).
// runs on the GEMM (jit/attention.cpp), selective_scan on jit/ssm_kernels.cpp, q_matmul on
// the int8 GEMM (jit/qgemm.cpp), dequant_matmul on jit/packed_kernels.cpp, the Gaussian
// splatting ops on jit/splat_step.cpp.
#include "library.hpp"

#include "attention.hpp"
#include "fftw_kernels.hpp"
#include "packed_kernels.hpp"
#include "qgemm.hpp"
#include "recurrent.hpp"
#include "splat_step.hpp"
#include "ssm_kernels.hpp"
#include "steps.hpp"

#include <array>

namespace rlx::jit {

namespace {

bool fftw_takes(const ir::Graph&, const ir::Node& n) { return fftw::fftw_handles(n); }

std::vector<ir::NodeId> operands(const ir::Graph&, const ir::Node& n) { return n.inputs; }

class FftwCall final : public LibraryCall {
public:
  explicit FftwCall(const ir::Node& n) : node_(n) { fftw::fftw_prepare(n); }
  void run(const std::byte* const* reads, std::byte* out) const override {
    fftw::fftw_run(node_, reads[0], out);
  }

private:
  ir::Node node_;
};

std::unique_ptr<LibraryCall> fftw_call(const ir::Graph&, const ir::Node& n) {
  return std::make_unique<FftwCall>(n);
}

constexpr std::array kLibrary = {
    LibraryKernel{"fftw", fftw_takes, operands, fftw_call},
    LibraryKernel{"attention", attention_handles, attention_reads, attention_prepare},
    LibraryKernel{"recurrent", recurrent_handles, operands, recurrent_prepare},
    LibraryKernel{"ssm", ssm_handles, operands, ssm_prepare},
    LibraryKernel{"qgemm", qgemm_handles, operands, qgemm_prepare},
    LibraryKernel{"dequant_matmul", packed_handles, operands, packed_prepare},
    LibraryKernel{"splat", splat_handles, operands, splat_prepare},
};

} // namespace

namespace {

class LibraryStep final : public PreparedStep {
public:
  LibraryStep(std::unique_ptr<LibraryCall> call, const ir::LirStep& step)
      : call_(std::move(call)), step_(step) {}
  void run(RunState& s) const override {
    std::vector<const std::byte*> reads;
    for (ir::NodeId in : step_.reads) reads.push_back(s.ptr[in.index]);
    call_->run(reads.data(), s.result(step_.node));
  }

private:
  std::unique_ptr<LibraryCall> call_;
  const ir::LirStep& step_;
};

/// A library kernel as a rule of the step policy: its plans and strides are made when the
/// executable is built.
class LibraryRule final : public JitRule {
public:
  explicit LibraryRule(const LibraryKernel& k) : JitRule(k.name), kernel_(k) {}
  bool takes(const ir::Graph& g, const ir::Node& n) const override { return kernel_.handles(g, n); }
  std::vector<ir::NodeId> reads(const ir::Graph& g, const ir::Node& n) const override {
    return kernel_.reads(g, n);
  }
  bool folds(const ir::Graph& g, ir::NodeId id) const override { return library_view(g, id); }
  std::unique_ptr<PreparedStep> prepare(PrepareContext& c, std::size_t i) const override {
    const ir::LirStep& step = c.lir.steps[i];
    return std::make_unique<LibraryStep>(kernel_.prepare(c.lir.mir, c.lir.mir.node(step.node)),
                                         step);
  }

private:
  const LibraryKernel& kernel_;
};

} // namespace

std::vector<const JitRule*> library_rules() {
  static const std::vector<std::unique_ptr<LibraryRule>> rules = [] {
    std::vector<std::unique_ptr<LibraryRule>> r;
    for (const LibraryKernel& k : kLibrary) r.push_back(std::make_unique<LibraryRule>(k));
    return r;
  }();
  std::vector<const JitRule*> out;
  for (const auto& r : rules) out.push_back(r.get());
  return out;
}

bool library_view(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op.kind() != ir::OpKind::Narrow || !n.shape.is_static() || n.shape.rank() == 0)
    return false;
  const ir::Shape& x = g.shape(n.inputs[0]);
  if (!x.is_static()) return false;
  int64_t axis = n.op.attrs<ir::NarrowAttrs>().axis;
  int64_t rank = int64_t(x.rank());
  return axis == rank - 1 || axis == -1;
}

RowView row_view(const ir::Graph& g, ir::NodeId id) {
  if (!library_view(g, id)) {
    const ir::Shape& s = g.shape(id);
    return {id, 0, s.rank() ? s.sizes().back() : 1};
  }
  const ir::Node& n = g.node(id);
  return {n.inputs[0], n.op.attrs<ir::NarrowAttrs>().start, g.shape(n.inputs[0]).sizes().back()};
}

} // namespace rlx::jit
