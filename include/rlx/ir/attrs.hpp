// include/rlx/ir/attrs.hpp -- the attribute structs of every op (generated from attrs.def), the
// small enums they use, and AnyAttrs, the variant an Op stores.
#pragma once

#include "rlx/enum.hpp"
#include "rlx/ir/dtype.hpp"
#include "rlx/ir/op_kind.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rlx::ir {

using Ints = std::vector<int64_t>;
using Ints2 = std::array<int64_t, 2>;
using Ints3 = std::array<int64_t, 3>;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Raw bytes (constant payloads); printed as hex so text round-trips exactly.
struct Bytes {
  std::vector<uint8_t> data;
  friend bool operator==(const Bytes&, const Bytes&) = default;
};

class Graph; // rlx/ir/graph.hpp

/// A graph-valued attribute (custom_fn's bodies): an immutable graph shared by copies of the op,
/// compared deeply (two custom_fns with different bodies are different ops). The default is the
/// empty graph. Printed as a nested `graph @name { ... }` in the text IR and as a nested graph
/// object in JSON.
class SubGraph {
public:
  SubGraph() = default;
  explicit SubGraph(Graph g);
  /// The graph (an empty one for a default SubGraph).
  const Graph& get() const;
  friend bool operator==(const SubGraph& a, const SubGraph& b);

private:
  std::shared_ptr<const Graph> graph_;
};

/// How attention masks scores: None, Causal, SlidingWindow (uses `window`), a Custom [B, Sk]
/// validity input (1 = keep, < 0.5 = masked), or an additive Bias input [B, H, Sq, Sk].
RLX_ENUM(MaskType, None, Causal, SlidingWindow, Custom, Bias)
/// RoPE pairings: NeoX rotates halves (i, i + n/2); GptJ rotates neighbours (2i, 2i + 1).
RLX_ENUM(RopeStyle, NeoX, GptJ)
/// Pad modes: constant value, reflect (no edge repeat), edge (replicate).
RLX_ENUM(PadMode, Constant, Reflect, Edge)
/// Resampling modes for interpolate1d / interpolate3d.
RLX_ENUM(InterpMode, Linear, Nearest)
/// FFT scaling (RLX's FftNorm): Backward leaves both directions unnormalized
/// (ifft(fft(x)) = N x), Forward scales the inverse by 1/N (numpy's default "backward"), Ortho
/// scales both by 1/sqrt(N).
RLX_ENUM(FftNorm, Backward, Forward, Ortho)
/// Analysis windows of spectrogram, periodic (scipy.signal.get_window's default).
RLX_ENUM(WindowKind, Rectangular, Hann, Hamming, Blackman)

/// RLX's MaskKind: a mask type plus the window size of SlidingWindow.
struct MaskKind {
  MaskType type = MaskType::None;
  int64_t window = 0;
  static MaskKind none() { return {MaskType::None, 0}; }
  static MaskKind causal() { return {MaskType::Causal, 0}; }
  static MaskKind sliding_window(int64_t w) { return {MaskType::SlidingWindow, w}; }
  static MaskKind custom() { return {MaskType::Custom, 0}; }
  static MaskKind bias() { return {MaskType::Bias, 0}; }
  friend bool operator==(const MaskKind&, const MaskKind&) = default;
};

#define F(type, name, def) type name = def;
#define ATTRS(Name, FIELDS)                                                                        \
  struct Name {                                                                                    \
    FIELDS                                                                                         \
    friend bool operator==(const Name&, const Name&) = default;                                    \
  };
#include "rlx/ir/attrs.def"
#undef F

/// Every attribute struct, in attrs.def order.
#define ATTRS(Name, FIELDS) Name,
using AnyAttrs = std::variant<
#include "rlx/ir/attrs.def"
    std::monostate>;

} // namespace rlx::ir
