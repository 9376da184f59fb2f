// tools/rlx/feeds.hpp -- `rlx run`'s --in/--param feeds: matching, loading, binding, checking.
#pragma once

#include <rlx/interp.hpp>
#include <rlx/ir/graph.hpp>
#include <rlx/ir/shape.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlx::cli {

/// One `--in NAME=PATH` or `--param NAME=PATH` option and, once loaded, its tensor.
struct Feed {
  bool is_param = false;
  std::string name;
  std::string path;
  Buffer buffer;
  bool preset = false; ///< the buffer came with the model (an ONNX initializer), not from a file

  /// "--in x=a.npy", for error messages.
  std::string option() const;
};

/// Parse the option values into feeds (a UsageError for a malformed or repeated NAME).
std::vector<Feed> parse_feeds(std::span<const std::string> inputs,
                              std::span<const std::string> params);

/// One feed per Input and Param node of `g`, in graph order (the executable's leaves). An
/// rlx::Error when a feed names no leaf of its kind, or when a leaf has no feed.
std::vector<const Feed*> match_feeds(const ir::Graph& g, std::span<const Feed> feeds);

/// Read every feed's .npy file (errors name the option). .npy has no bf16, so f32 data fed to a
/// bf16 leaf is rounded to bf16.
void load_feeds(const ir::Graph& g, std::span<Feed> feeds);

/// Complete `binding` (from --bind) with the sizes the fed tensors give the graph's dynamic dims
/// (and ?rows = ?batch * ?seq when only that is missing). An rlx::Error when two sources disagree
/// or a symbol stays unbound.
ir::DimBinding infer_binding(const ir::Graph& g, std::span<const Feed* const> leaves,
                             ir::DimBinding binding);

/// A feed for every Input of `g`, and every Param no feed in `feeds` names, holding values from a
/// counter-based generator: the same `stream` gives the same values on every machine (floats
/// uniform in [-1, 1), integers in [0, 10), bools 0 or 1; complex: both parts as floats). Dynamic
/// dims take their sizes from `binding` (with ?rows = ?batch * ?seq when only that is missing);
/// an rlx::Error (ErrorKind::Bind) names a leaf and its dim when one is unbound.
std::vector<Feed> random_feeds(const ir::Graph& g, std::span<const Feed> feeds,
                               ir::DimBinding binding, uint64_t stream);

/// Check every feed's dtype and shape against its leaf in the bound graph `g`.
void check_feeds(const ir::Graph& g, std::span<const Feed* const> leaves);

} // namespace rlx::cli
