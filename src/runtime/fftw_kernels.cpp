// src/runtime/fftw_kernels.cpp -- fft nodes on FFTW for the JIT. One guru "split" plan per
// (precision, layout, length, rows) describes both layouts without copying: the 2N real-block
// layout has real parts at stride 1 and imaginary parts n further, c64 interleaves them at
// stride 2. The inverse swaps the real and imaginary pointers (FFTW's documented way to run a
// split transform backwards). Plans are made with FFTW_UNALIGNED | FFTW_PRESERVE_INPUT on
// scratch arrays and run on each call's buffers through the new-array execute functions, which
// are thread safe; the planner is not, so one mutex guards planning and the plan table.
#include "runtime/fftw_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fftw3.h>
#include <map>
#include <mutex>
#include <tuple>

namespace rlx::runtime {

namespace {

struct Key {
  bool f64;
  bool interleaved;
  int64_t n, rows;
  auto operator<=>(const Key&) const = default;
};

/// A plan of either precision (never destroyed: plans live as long as the process).
struct Plan {
  fftwf_plan f = nullptr;
  fftw_plan d = nullptr;
};

struct Planner {
  std::mutex mutex;
  std::map<Key, Plan> plans;
  int64_t made = 0;
  bool measure = [] {
    const char* v = std::getenv("RLX_FFTW");
    return v && std::strcmp(v, "measure") == 0;
  }();
};

Planner& planner() {
  static Planner* p = new Planner(); // never destroyed: executables may outlive statics
  return *p;
}

Key key_of(const ir::Node& n) {
  const std::vector<int64_t> sizes = n.shape.sizes();
  int64_t last = sizes.back(), total = 1;
  for (int64_t s : sizes) total *= s;
  bool interleaved = n.shape.dtype() == ir::DType::C64;
  return {n.shape.dtype() == ir::DType::F64, interleaved, interleaved ? last : last / 2,
          last ? total / last : 0};
}

template <class Dim> void describe(const Key& k, Dim& len, Dim& batch) {
  len.n = int(k.n);
  len.is = len.os = k.interleaved ? 2 : 1;
  batch.n = int(k.rows);
  batch.is = batch.os = int(2 * k.n);
}

Plan make_plan(const Key& k, bool measure) {
  unsigned flags = (measure ? FFTW_MEASURE : FFTW_ESTIMATE) | FFTW_UNALIGNED | FFTW_PRESERVE_INPUT;
  std::size_t elems = std::size_t(2 * k.n * k.rows);
  Plan p;
  if (k.f64) {
    fftw_iodim len, batch;
    describe(k, len, batch);
    auto* in = static_cast<double*>(fftw_malloc(sizeof(double) * elems));
    auto* out = static_cast<double*>(fftw_malloc(sizeof(double) * elems));
    std::memset(in, 0, sizeof(double) * elems);
    std::ptrdiff_t im = k.interleaved ? 1 : k.n;
    p.d = fftw_plan_guru_split_dft(1, &len, 1, &batch, in, in + im, out, out + im, flags);
    fftw_free(in);
    fftw_free(out);
  } else {
    fftwf_iodim len, batch;
    describe(k, len, batch);
    auto* in = static_cast<float*>(fftwf_malloc(sizeof(float) * elems));
    auto* out = static_cast<float*>(fftwf_malloc(sizeof(float) * elems));
    std::memset(in, 0, sizeof(float) * elems);
    std::ptrdiff_t im = k.interleaved ? 1 : k.n;
    p.f = fftwf_plan_guru_split_dft(1, &len, 1, &batch, in, in + im, out, out + im, flags);
    fftwf_free(in);
    fftwf_free(out);
  }
  RLX_CHECK(p.f || p.d, "FFTW could not plan an fft of length ", k.n, " over ", k.rows, " rows");
  return p;
}

Plan plan_for(const Key& k) {
  Planner& pl = planner();
  std::lock_guard lock(pl.mutex);
  auto it = pl.plans.find(k);
  if (it != pl.plans.end()) return it->second;
  Plan p = make_plan(k, pl.measure);
  ++pl.made;
  pl.plans.emplace(k, p);
  return p;
}

template <class T> void scale_all(T* data, std::size_t count, double s) {
  if (s == 1.0) return;
  for (std::size_t i = 0; i < count; ++i) data[i] = T(double(data[i]) * s);
}

} // namespace

bool fftw_handles(const ir::Node& n) {
  if (n.op.kind() != ir::OpKind::Fft || !n.shape.is_static() || n.shape.rank() == 0) return false;
  ir::DType t = n.shape.dtype();
  return t == ir::DType::F32 || t == ir::DType::F64 || t == ir::DType::C64;
}

void fftw_prepare(const ir::Node& n) {
  Key k = key_of(n);
  if (k.n > 1 && k.rows > 0) plan_for(k);
}

interp::Buffer fftw_run(const ir::Node& n, const interp::Buffer& x) {
  interp::Buffer out = interp::Buffer::uninitialized(n.shape);
  Key k = key_of(n);
  if (k.n == 0 || k.rows == 0) return out;
  if (k.n == 1) { // every norm scales a 1-point transform by 1: a copy
    std::copy(x.bytes().begin(), x.bytes().end(), out.bytes().begin());
    return out;
  }
  Plan p = plan_for(k);
  const auto& attrs = n.op.attrs<ir::FftAttrs>();
  double s = 1.0;
  if (attrs.norm == ir::FftNorm::Ortho) s = 1.0 / std::sqrt(double(k.n));
  if (attrs.norm == ir::FftNorm::Forward && attrs.inverse) s = 1.0 / double(k.n);
  std::ptrdiff_t im = k.interleaved ? 1 : k.n;
  std::size_t count = std::size_t(2 * k.n * k.rows);
  if (k.f64) {
    auto* in = reinterpret_cast<double*>(const_cast<std::byte*>(x.bytes().data()));
    auto* o = reinterpret_cast<double*>(out.bytes().data());
    if (attrs.inverse) // swapping re and im turns the forward transform into the inverse
      fftw_execute_split_dft(p.d, in + im, in, o + im, o);
    else
      fftw_execute_split_dft(p.d, in, in + im, o, o + im);
    scale_all(o, count, s);
  } else {
    auto* in = reinterpret_cast<float*>(const_cast<std::byte*>(x.bytes().data()));
    auto* o = reinterpret_cast<float*>(out.bytes().data());
    if (attrs.inverse)
      fftwf_execute_split_dft(p.f, in + im, in, o + im, o);
    else
      fftwf_execute_split_dft(p.f, in, in + im, o, o + im);
    scale_all(o, count, s);
  }
  return out;
}

int64_t fftw_plans_made() {
  Planner& pl = planner();
  std::lock_guard lock(pl.mutex);
  return pl.made;
}

void set_fftw_measure(bool measure) {
  Planner& pl = planner();
  std::lock_guard lock(pl.mutex);
  pl.measure = measure;
}

} // namespace rlx::runtime
