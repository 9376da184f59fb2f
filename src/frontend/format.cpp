// src/frontend/format.cpp -- format_buffer: torch 1.13's tensor layout (torch/_tensor_str.py).
//
// The functions mirror torch's: FloatFormat is _Formatter for floating values, Printer::vector_str
// and Printer::tensor_str are _vector_str and _tensor_str_with_formatter, and the suffix rule is
// _add_suffixes. Number texts are Python's "{:.Nf}" / "{:.Ne}", which C's printf matches for
// finite values (both round the exact binary value correctly); non-finite values are spelled by
// hand because printf may print "-nan".
#include "frontend/format.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <optional>
#include <string_view>
#include <vector>

namespace rlx::detail {
namespace {

constexpr std::string_view kPrefix = "tensor(";

std::string non_finite(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

/// Python's "{:.{p}f}".format(v).
std::string fixed_text(double v, int precision) {
  if (!std::isfinite(v)) return non_finite(v);
  int n = std::snprintf(nullptr, 0, "%.*f", precision, v);
  std::string out(std::size_t(n), '\0');
  std::snprintf(out.data(), out.size() + 1, "%.*f", precision, v);
  return out;
}

/// Python's "{:.{p}e}".format(v): "1.0000e+10".
std::string sci_text(double v, int precision) {
  if (!std::isfinite(v)) return non_finite(v);
  int n = std::snprintf(nullptr, 0, "%.*e", precision, v);
  std::string out(std::size_t(n), '\0');
  std::snprintf(out.data(), out.size() + 1, "%.*e", precision, v);
  return out;
}

std::string pad_left(std::string s, std::size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

/// torch's _Formatter for floating values: one notation and one width for the whole tensor,
/// chosen from the shown values that are finite and nonzero.
class FloatFormat {
public:
  FloatFormat(const std::vector<double>& shown, int precision) : precision_(precision) {
    std::vector<double> vals;
    for (double v : shown)
      if (std::isfinite(v) && v != 0.0) vals.push_back(v);
    if (vals.empty()) return; // no valid number: "0.", "nan", width 1
    double lo = INFINITY, hi = 0.0;
    for (double v : vals) {
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double v : vals) {
      std::size_t len = sci_mode_   ? sci_text(v, precision_).size()
                        : int_mode_ ? fixed_text(v, 0).size() + 1
                                    : fixed_text(v, precision_).size();
      width_ = std::max(width_, len);
    }
  }

  std::size_t width() const { return width_; }

  std::string operator()(double v) const {
    if (sci_mode_) return pad_left(sci_text(v, precision_), width_);
    if (int_mode_) {
      std::string s = fixed_text(v, 0);
      if (std::isfinite(v)) s += '.';
      return pad_left(std::move(s), width_);
    }
    return pad_left(fixed_text(v, precision_), width_);
  }

private:
  int precision_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  std::size_t width_ = 1;
};

/// Which entries of one axis are shown: all of them, or `head` then "..." then `tail`.
struct AxisView {
  std::vector<int64_t> head, tail;
  bool summarized = false;
};

class Printer {
public:
  Printer(const Buffer& b, const PrintOptions& opts) : b_(b), opts_(opts) {
    const std::vector<int64_t> sizes = b.shape().sizes();
    const bool summarize = b.numel() > opts.threshold;
    const int64_t edge = std::clamp<int64_t>(opts.edgeitems, 0, ir::kMaxDimSize);
    strides_.assign(sizes.size(), 1);
    for (std::size_t a = sizes.size(); a-- > 1;) strides_[a - 1] = strides_[a] * sizes[a];
    for (int64_t n : sizes) {
      AxisView v;
      v.summarized = summarize && n > 2 * edge;
      for (int64_t i = 0; i < (v.summarized ? edge : n); ++i) v.head.push_back(i);
      if (v.summarized)
        for (int64_t i = n - edge; i < n; ++i) v.tail.push_back(i);
      axes_.push_back(std::move(v));
    }
    prepare_formatters();
  }

  /// The bracketed values, or the one value of a rank-0 tensor.
  std::string body() const { return axes_.empty() ? element(0) : tensor_str(0, 0, kPrefix.size()); }

private:
  void collect_shown(std::size_t axis, int64_t base, std::vector<int64_t>& out) const {
    if (axis == axes_.size()) {
      out.push_back(base);
      return;
    }
    for (const auto* part : {&axes_[axis].head, &axes_[axis].tail})
      for (int64_t i : *part) collect_shown(axis + 1, base + i * strides_[axis], out);
  }

  // Widths are computed over the shown elements only (torch's get_summarized_data).
  void prepare_formatters() {
    std::vector<int64_t> shown;
    collect_shown(0, 0, shown);
    const ir::DType t = b_.dtype();
    const int precision = std::max(opts_.precision, 0);
    if (ir::is_complex(t)) {
      std::vector<double> re, im;
      for (int64_t i : shown) {
        std::complex<float> c = b_.get_c64(i);
        re.push_back(c.real());
        im.push_back(c.imag());
      }
      real_.emplace(re, precision);
      imag_.emplace(im, precision);
    } else if (ir::is_float(t)) {
      std::vector<double> vals;
      for (int64_t i : shown) vals.push_back(b_.get_f64(i));
      real_.emplace(vals, precision);
    } else {
      for (int64_t i : shown) int_width_ = std::max(int_width_, int_text(i).size());
    }
  }

  std::string int_text(int64_t flat) const {
    if (ir::is_bool(b_.dtype())) return b_.get_i64(flat) ? "True" : "False";
    return std::to_string(b_.get_i64(flat));
  }

  /// Characters one element takes in a row, with its ", ".
  std::size_t element_length() const {
    if (imag_) return real_->width() + 2 + imag_->width() + 1;
    if (real_) return real_->width() + 2;
    return int_width_ + 2;
  }

  std::string element(int64_t flat) const {
    if (imag_) {
      std::complex<float> c = b_.get_c64(flat);
      std::string re = (*real_)(c.real());
      std::string im = (*imag_)(c.imag()) + "j";
      im.erase(0, im.find_first_not_of(' '));
      if (im[0] == '+' || im[0] == '-') return re + im;
      return re + "+" + im;
    }
    if (real_) return (*real_)(b_.get_f64(flat));
    return pad_left(int_text(flat), int_width_);
  }

  /// One row of the last axis, wrapped to the line width.
  std::string vector_str(int64_t base, std::size_t indent) const {
    const AxisView& v = axes_.back();
    std::vector<std::string> data;
    for (int64_t i : v.head) data.push_back(element(base + i));
    if (v.summarized) data.push_back(" ...");
    for (int64_t i : v.tail) data.push_back(element(base + i));

    const double room = double(opts_.linewidth) - double(indent);
    const auto per_line = std::size_t(std::max(1.0, std::floor(room / double(element_length()))));
    std::string out = "[";
    for (std::size_t k = 0; k < data.size(); ++k) {
      if (k > 0 && k % per_line == 0)
        out += ",\n" + std::string(indent + 1, ' ');
      else if (k > 0)
        out += ", ";
      out += data[k];
    }
    return out + "]";
  }

  std::string tensor_str(std::size_t axis, int64_t base, std::size_t indent) const {
    if (axis + 1 == axes_.size()) return vector_str(base, indent);
    const AxisView& v = axes_[axis];
    std::vector<std::string> slices;
    for (int64_t i : v.head)
      slices.push_back(tensor_str(axis + 1, base + i * strides_[axis], indent + 1));
    if (v.summarized) slices.push_back("...");
    for (int64_t i : v.tail)
      slices.push_back(tensor_str(axis + 1, base + i * strides_[axis], indent + 1));

    // Blocks of rank r are separated by r - 1 line breaks.
    const std::string sep =
        "," + std::string(axes_.size() - axis - 1, '\n') + std::string(indent + 1, ' ');
    std::string out = "[";
    for (std::size_t k = 0; k < slices.size(); ++k) {
      if (k > 0) out += sep;
      out += slices[k];
    }
    return out + "]";
  }

  const Buffer& b_;
  const PrintOptions& opts_;
  std::vector<int64_t> strides_;
  std::vector<AxisView> axes_;
  std::optional<FloatFormat> real_, imag_; // floats (real_), or c64 (both)
  std::size_t int_width_ = 1;              // integers and bools
};

/// torch's _add_suffixes with one suffix: ", f32[2,3])", or on its own line when the last line
/// would pass the line width (torch's count of the last line is its length plus 2).
std::string add_suffix(std::string text, const std::string& suffix, const PrintOptions& opts) {
  const std::size_t nl = text.rfind('\n');
  const int64_t last_line = int64_t(text.size()) - (nl == std::string::npos ? -1 : int64_t(nl)) + 1;
  if (last_line + int64_t(suffix.size()) + 2 > opts.linewidth)
    text += ",\n" + std::string(kPrefix.size(), ' ') + suffix;
  else
    text += ", " + suffix;
  return text + ")";
}

} // namespace

std::string format_buffer(const Buffer& b, const PrintOptions& opts) {
  std::string text(kPrefix);
  text += b.numel() == 0 ? std::string("[]") : Printer(b, opts).body();
  return add_suffix(std::move(text), ir::short_str(b.shape()), opts);
}

} // namespace rlx::detail
