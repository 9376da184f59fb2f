// jit/fftw_kernels.cpp -- fft nodes on FFTW for the JIT. One guru "split" plan per
// (precision, layout, length, rows, direction) describes both layouts without copying: the 2N
// real-block layout has real parts at stride 1 and imaginary parts n further, c64 interleaves them
// at stride 2. The inverse swaps the real and imaginary pointers (FFTW's documented way to run a
// split transform backwards), in its own plan. Plans are made with FFTW_UNALIGNED |
// FFTW_PRESERVE_INPUT on scratch arrays and run on each call's buffers through the new-array
// execute functions, which are thread safe; the planner is not, so one mutex guards planning and
// the plan table.
#include "fftw_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fftw3.h>
#include <map>
#include <mutex>
#include <utility>

namespace rlx::fftw {

namespace {

struct Key {
  bool f64;
  bool interleaved;
  int64_t n, rows;
  bool inverse;
  bool measure = false; ///< FFTW_MEASURE: asking for measured plans plans each shape once more
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
  bool inverse = n.op.attrs<ir::FftAttrs>().inverse;
  const std::vector<int64_t> sizes = n.shape.sizes();
  int64_t last = sizes.back(), total = 1;
  for (int64_t s : sizes) total *= s;
  bool interleaved = n.shape.dtype() == ir::DType::C64;
  return {n.shape.dtype() == ir::DType::F64, interleaved, interleaved ? last : last / 2,
          last ? total / last : 0, inverse};
}

/// FFTW's double (fftw_*) and single (fftwf_*) precision APIs behind one name.
template <class T> struct Fftw;
template <> struct Fftw<double> {
  using Iodim = fftw_iodim;
  static void* alloc(std::size_t n) { return fftw_malloc(n); }
  static void release(void* p) { fftw_free(p); }
  static constexpr auto plan_split = fftw_plan_guru_split_dft;
  static constexpr auto execute_split = fftw_execute_split_dft;
};
template <> struct Fftw<float> {
  using Iodim = fftwf_iodim;
  static void* alloc(std::size_t n) { return fftwf_malloc(n); }
  static void release(void* p) { fftwf_free(p); }
  static constexpr auto plan_split = fftwf_plan_guru_split_dft;
  static constexpr auto execute_split = fftwf_execute_split_dft;
};

/// The (real, imaginary) pointers FFTW is given for an array of k's layout: the imaginary parts
/// start 1 (interleaved) or n (block) elements after the real ones; the inverse swaps them (a
/// forward split transform on swapped parts is the inverse). Plans are made with the geometry
/// they run with: FFTW may specialize on it (an interleaved pair is vectorized as one).
template <class T> std::pair<T*, T*> parts(T* base, const Key& k) {
  std::ptrdiff_t im = k.interleaved ? 1 : k.n;
  return k.inverse ? std::pair{base + im, base} : std::pair{base, base + im};
}

/// A split plan of k on scratch arrays (planning with FFTW_MEASURE overwrites its arrays).
template <class T> auto plan_split(const Key& k, unsigned flags) {
  typename Fftw<T>::Iodim len{}, batch{};
  len.n = int(k.n);
  len.is = len.os = k.interleaved ? 2 : 1;
  batch.n = int(k.rows);
  batch.is = batch.os = int(2 * k.n);
  std::size_t bytes = sizeof(T) * std::size_t(2 * k.n * k.rows);
  auto* in = static_cast<T*>(Fftw<T>::alloc(bytes));
  auto* out = static_cast<T*>(Fftw<T>::alloc(bytes));
  std::memset(in, 0, bytes);
  auto [ri, ii] = parts(in, k);
  auto [ro, io] = parts(out, k);
  auto plan = Fftw<T>::plan_split(1, &len, 1, &batch, ri, ii, ro, io, flags);
  Fftw<T>::release(in);
  Fftw<T>::release(out);
  return plan;
}

Plan make_plan(const Key& k, bool measure) {
  unsigned flags = (measure ? FFTW_MEASURE : FFTW_ESTIMATE) | FFTW_UNALIGNED | FFTW_PRESERVE_INPUT;
  Plan p;
  if (k.f64)
    p.d = plan_split<double>(k, flags);
  else
    p.f = plan_split<float>(k, flags);
  RLX_CHECK(p.f || p.d, "FFTW could not plan an fft of length ", k.n, " over ", k.rows, " rows");
  return p;
}

/// Run plan p on x's elements into out's, then scale.
template <class T, class P>
void execute(P plan, const Key& k, const std::byte* x, std::byte* out, double scale) {
  auto [ri, ii] = parts(reinterpret_cast<T*>(const_cast<std::byte*>(x)), k);
  auto [ro, io] = parts(reinterpret_cast<T*>(out), k);
  Fftw<T>::execute_split(plan, ri, ii, ro, io);
  T* o = reinterpret_cast<T*>(out);
  if (scale == 1.0) return;
  std::size_t count = std::size_t(2 * k.n * k.rows);
  for (std::size_t i = 0; i < count; ++i) o[i] = T(double(o[i]) * scale);
}

Plan plan_for(const Key& k) {
  Planner& pl = planner();
  std::lock_guard lock(pl.mutex);
  Key key = k;
  key.measure = pl.measure;
  auto it = pl.plans.find(key);
  if (it != pl.plans.end()) return it->second;
  Plan p = make_plan(key, key.measure);
  ++pl.made;
  pl.plans.emplace(key, p);
  return p;
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

void fftw_run(const ir::Node& n, const std::byte* x, std::byte* out) {
  Key k = key_of(n);
  if (k.n == 0 || k.rows == 0) return;
  if (k.n == 1) { // every norm scales a 1-point transform by 1: a copy
    std::memcpy(out, x, std::size_t(*n.shape.num_elements()) * ir::size_bytes(n.shape.dtype()));
    return;
  }
  Plan p = plan_for(k);
  const auto& attrs = n.op.attrs<ir::FftAttrs>();
  double s = 1.0;
  if (attrs.norm == ir::FftNorm::Ortho) s = 1.0 / std::sqrt(double(k.n));
  if (attrs.norm == ir::FftNorm::Forward && attrs.inverse) s = 1.0 / double(k.n);
  if (k.f64)
    execute<double>(p.d, k, x, out, s);
  else
    execute<float>(p.f, k, x, out, s);
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

} // namespace rlx::fftw
