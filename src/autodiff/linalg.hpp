// src/autodiff/linalg.hpp -- the linear-algebra kinds' VJP and JVP rules (src/autodiff/linalg.cpp),
// rows of the tables in vjp_rules.cpp and jvp_rules.cpp.
#pragma once

#include "rules.hpp"

namespace rlx::autodiff::linalg {

std::vector<Grad> vjp_solve(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_slogdet(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_cholesky(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_qr(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_svd(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_eigh(Builder& b, const Node& n, NodeId dy, std::span<const char> want);

Grad jvp_solve(Builder& b, const Node& n, std::span<const Grad> t);
Grad jvp_slogdet(Builder& b, const Node& n, std::span<const Grad> t);
Grad jvp_cholesky(Builder& b, const Node& n, std::span<const Grad> t);
Grad jvp_qr(Builder& b, const Node& n, std::span<const Grad> t);
Grad jvp_svd(Builder& b, const Node& n, std::span<const Grad> t);
Grad jvp_eigh(Builder& b, const Node& n, std::span<const Grad> t);

} // namespace rlx::autodiff::linalg
