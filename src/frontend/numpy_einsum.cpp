// src/frontend/numpy_einsum.cpp -- rlx::einsum (numpy.einsum and torch.einsum's notation,
// `...` included) composed from existing Tensor ops: each operand's repeated labels become a
// diagonal, labels no later term needs are summed out, and the operands contract pairwise
// through matmul over merged label groups, so no new IR op kind is needed.
#include "frontend/impl.hpp"
#include "frontend/ops.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlx {

namespace {

using detail::at_loc;
using detail::check_defined;
using detail::product;

/// Letters are their character codes; the k-th broadcast (`...`) axis of the result is
/// kEllipsis + k.
constexpr int kEllipsis = 256;

struct Term {
  std::vector<int> labels;
  Tensor t;
};

std::string label_str(int l) {
  return l >= kEllipsis ? "..." + std::to_string(l - kEllipsis) : std::string(1, char(l));
}

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// The letters of one term, with -1 where `...` stands; an error naming the term otherwise.
std::vector<int> parse_term(std::string_view term, std::string_view spec, const std::string& who,
                            const Loc& loc) {
  std::vector<int> out;
  for (std::size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (term.substr(i, 3) != "..." || std::find(out.begin(), out.end(), -1) != out.end())
        fail(ErrorKind::Value, "einsum: ", who, " '", term,
             "' has a '.' that is not one '...', in \"", spec, "\"", at_loc(loc));
      out.push_back(-1);
      i += 2;
      continue;
    }
    if (!is_letter(c))
      fail(ErrorKind::Value, "einsum: invalid character '", std::string(1, c), "' in ", who, " '",
           term, "' of \"", spec, "\" (letters a-z, A-Z and '...' only)", at_loc(loc));
    out.push_back(int(c));
  }
  return out;
}

/// Sum out the axes whose label `keep` rejects.
template <class Keep> Term sum_unneeded(Term t, Keep keep, const Loc& loc) {
  Dims axes;
  std::vector<int> rest;
  for (std::size_t i = 0; i < t.labels.size(); ++i)
    if (keep(t.labels[i]))
      rest.push_back(t.labels[i]);
    else
      axes.push_back(int64_t(i));
  if (axes.empty()) return t;
  return {rest, sum(t.t, axes, false, loc)};
}

int64_t label_size(const Term& t, int label, const Loc& loc) {
  auto it = std::find(t.labels.begin(), t.labels.end(), label);
  return t.t.size(int64_t(it - t.labels.begin()), loc);
}

/// t's axes reordered as `order` (labels of t), merged into groups of the given lengths, with
/// broadcast (size-1) axes expanded to `sizes`.
Tensor arrange(const Term& t, const std::vector<int>& order, const std::vector<int64_t>& sizes,
               const Dims& groups, const Loc& loc) {
  Dims perm, full;
  for (std::size_t i = 0; i < order.size(); ++i) {
    perm.push_back(
        int64_t(std::find(t.labels.begin(), t.labels.end(), order[i]) - t.labels.begin()));
    full.push_back(sizes[i]);
  }
  Tensor p = permute(t.t, perm, loc);
  if (p.sizes(loc) != full) p = p.expand(full, loc);
  Dims merged;
  std::size_t at = 0;
  for (int64_t g : groups) {
    merged.push_back(product(full, at, at + std::size_t(g)));
    at += std::size_t(g);
  }
  return p.reshape(merged, loc);
}

/// a and b contracted over the labels they share that `needed` does not want; shared wanted
/// labels become batch axes. One batched matmul [batch, free_a, k] @ [batch, k, free_b].
Term contract(Term a, Term b, const std::vector<int>& needed, const Loc& loc) {
  auto in = [](const std::vector<int>& v, int l) {
    return std::find(v.begin(), v.end(), l) != v.end();
  };
  a = sum_unneeded(a, [&](int l) { return in(needed, l) || in(b.labels, l); }, loc);
  b = sum_unneeded(b, [&](int l) { return in(needed, l) || in(a.labels, l); }, loc);
  std::vector<int> batch, contracted, free_a, free_b;
  for (int l : a.labels)
    (in(b.labels, l) ? (in(needed, l) ? batch : contracted) : free_a).push_back(l);
  for (int l : b.labels)
    if (!in(a.labels, l)) free_b.push_back(l);
  auto size_of = [&](int l) {
    int64_t sa = in(a.labels, l) ? label_size(a, l, loc) : 1;
    int64_t sb = in(b.labels, l) ? label_size(b, l, loc) : 1;
    return std::max(sa, sb);
  };
  auto sizes = [&](std::initializer_list<const std::vector<int>*> parts) {
    std::vector<int64_t> out;
    for (const auto* p : parts)
      for (int l : *p) out.push_back(size_of(l));
    return out;
  };
  std::vector<int> order_a = batch, order_b = batch;
  order_a.insert(order_a.end(), free_a.begin(), free_a.end());
  order_a.insert(order_a.end(), contracted.begin(), contracted.end());
  order_b.insert(order_b.end(), contracted.begin(), contracted.end());
  order_b.insert(order_b.end(), free_b.begin(), free_b.end());
  auto size_list = [&](const std::vector<int>& order) { // size-1 broadcast axes expanded
    std::vector<int64_t> out;
    for (int l : order) out.push_back(size_of(l));
    return out;
  };
  Tensor ma =
      arrange(a, order_a, size_list(order_a),
              {int64_t(batch.size()), int64_t(free_a.size()), int64_t(contracted.size())}, loc);
  Tensor mb =
      arrange(b, order_b, size_list(order_b),
              {int64_t(batch.size()), int64_t(contracted.size()), int64_t(free_b.size())}, loc);
  Tensor prod_ab = matmul(ma, mb, loc);
  std::vector<int> labels = batch;
  labels.insert(labels.end(), free_a.begin(), free_a.end());
  labels.insert(labels.end(), free_b.begin(), free_b.end());
  return {labels, prod_ab.reshape(sizes({&batch, &free_a, &free_b}), loc)};
}

} // namespace

Tensor einsum(std::string_view spec, std::span<const Tensor> operands, Loc loc) {
  if (operands.empty())
    fail(ErrorKind::Value, "einsum: no operands for \"", spec, "\"", at_loc(loc));
  for (const Tensor& t : operands) check_defined(t, "einsum", loc);
  const std::size_t arrow = spec.find("->");
  std::string_view lhs = spec.substr(0, arrow);
  std::vector<std::string_view> terms;
  for (std::size_t start = 0;;) {
    std::size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    fail(ErrorKind::Value, "einsum: \"", spec, "\" has ", terms.size(), " operand terms but ",
         operands.size(), " operands were given", at_loc(loc));

  // Letters per operand, `...` expanded to right-aligned broadcast labels.
  std::vector<std::vector<int>> raw;
  std::vector<int64_t> ell(terms.size(), 0);
  int64_t n_ell = 0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    raw.push_back(parse_term(terms[i], spec, "operand " + std::to_string(i) + "'s term", loc));
    const bool has = std::find(raw[i].begin(), raw[i].end(), -1) != raw[i].end();
    const int64_t letters = int64_t(raw[i].size()) - (has ? 1 : 0);
    const int64_t rank = operands[i].ndim();
    if (has ? letters > rank : letters != rank)
      fail(ErrorKind::Shape, "einsum: operand ", i, " is ", ir::short_str(operands[i].shape()),
           " but its term '", terms[i], "' names ", letters, " axes", at_loc(loc));
    ell[i] = has ? rank - letters : 0;
    n_ell = std::max(n_ell, ell[i]);
  }
  std::vector<Term> ts;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    Term t{{}, operands[i]};
    for (int l : raw[i])
      if (l == -1)
        for (int64_t k = 0; k < ell[i]; ++k)
          t.labels.push_back(int(kEllipsis + n_ell - ell[i] + k));
      else
        t.labels.push_back(l);
    ts.push_back(std::move(t));
  }

  // Sizes agree per letter; broadcast axes may also be 1.
  std::vector<int64_t> size_of(kEllipsis + std::size_t(n_ell), -1);
  std::vector<std::size_t> seen_in(size_of.size(), 0);
  for (std::size_t i = 0; i < ts.size(); ++i)
    for (std::size_t j = 0; j < ts[i].labels.size(); ++j) {
      int l = ts[i].labels[j];
      int64_t s = ts[i].t.size(int64_t(j), loc);
      int64_t& known = size_of[std::size_t(l)];
      if (known == -1 || (l >= kEllipsis && known == 1)) {
        known = s;
        seen_in[std::size_t(l)] = i;
      } else if (s != known && !(l >= kEllipsis && s == 1)) {
        fail(ErrorKind::Shape, "einsum: ",
             l >= kEllipsis ? "broadcast axis " + label_str(l) : "letter '" + label_str(l) + "'",
             " has size ", known, " in operand ", seen_in[std::size_t(l)], " (",
             ir::short_str(operands[seen_in[std::size_t(l)]].shape()), ") but ", s, " in operand ",
             i, " (", ir::short_str(operands[i].shape()), ") of \"", spec, "\"", at_loc(loc));
      }
    }

  // The output: explicit, or numpy's implicit form (broadcast axes, then the letters used once,
  // in alphabetical order).
  std::vector<int> output;
  if (arrow != std::string_view::npos) {
    std::string_view rhs = spec.substr(arrow + 2);
    std::vector<int> parsed = parse_term(rhs, spec, "the output", loc);
    bool has = false;
    for (int l : parsed) {
      if (l == -1) {
        has = true;
        for (int64_t k = 0; k < n_ell; ++k) output.push_back(int(kEllipsis + k));
        continue;
      }
      if (std::find(output.begin(), output.end(), l) != output.end())
        fail(ErrorKind::Value, "einsum: output letter '", label_str(l),
             "' appears more than once in \"", spec, "\"", at_loc(loc));
      if (size_of[std::size_t(l)] == -1)
        fail(ErrorKind::Value, "einsum: output letter '", label_str(l),
             "' is not in any operand of \"", spec, "\"", at_loc(loc));
      output.push_back(l);
    }
    if (!has && n_ell > 0)
      fail(ErrorKind::Value, "einsum: the operands of \"", spec,
           "\" have '...' axes but the output has no '...'", at_loc(loc));
  } else {
    for (int64_t k = 0; k < n_ell; ++k) output.push_back(int(kEllipsis + k));
    std::vector<int> count(kEllipsis, 0);
    for (const Term& t : ts)
      for (int l : t.labels)
        if (l < kEllipsis) ++count[std::size_t(l)];
    for (int l = 0; l < kEllipsis; ++l)
      if (count[std::size_t(l)] == 1) output.push_back(l);
  }

  // Operands in one dtype; repeated letters within a term become diagonals.
  DType dt = operands[0].dtype();
  for (const Tensor& t : operands) dt = ir::promote(dt, t.dtype());
  for (Term& t : ts) {
    if (t.t.dtype() != dt) t.t = t.t.astype(dt, loc);
    for (std::size_t j = 0; j < t.labels.size(); ++j)
      for (std::size_t k = j + 1; k < t.labels.size(); ++k)
        if (t.labels[k] == t.labels[j]) {
          t.t = diagonal(t.t, 0, int64_t(j), int64_t(k), loc);
          int l = t.labels[j];
          t.labels.erase(t.labels.begin() + std::ptrdiff_t(k));
          t.labels.erase(t.labels.begin() + std::ptrdiff_t(j));
          t.labels.push_back(l);
          k = j; // rescan from j: the labels shifted
        }
  }

  // Left to right: each step keeps the labels a later operand or the output still needs.
  auto in = [](const std::vector<int>& v, int l) {
    return std::find(v.begin(), v.end(), l) != v.end();
  };
  Term acc = ts[0];
  for (std::size_t i = 1; i < ts.size(); ++i) {
    std::vector<int> needed = output;
    for (std::size_t j = i + 1; j < ts.size(); ++j)
      needed.insert(needed.end(), ts[j].labels.begin(), ts[j].labels.end());
    acc = contract(std::move(acc), ts[i], needed, loc);
  }
  acc = sum_unneeded(std::move(acc), [&](int l) { return in(output, l); }, loc);
  Dims perm, full;
  for (int l : output) {
    perm.push_back(
        int64_t(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin()));
    full.push_back(size_of[std::size_t(l)]);
  }
  Tensor out = permute(acc.t, perm, loc);
  if (out.sizes(loc) != full) out = out.expand(full, loc);
  return out;
}
Tensor einsum(std::string_view spec, std::initializer_list<Tensor> operands, Loc loc) {
  return einsum(spec, std::span<const Tensor>(operands.begin(), operands.size()), loc);
}

} // namespace rlx
