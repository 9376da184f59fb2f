// src/autodiff/splat.hpp -- the Gaussian splatting render's VJP and JVP rules
// (src/autodiff/splat.cpp), rows of the tables in vjp_rules.cpp and jvp_rules.cpp.
#pragma once

#include "rules.hpp"

namespace rlx::autodiff::splat {

std::vector<Grad> vjp_render(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
Grad jvp_render(Builder& b, const Node& n, std::span<const Grad> t);

} // namespace rlx::autodiff::splat
