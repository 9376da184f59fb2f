// src/autodiff/collective.hpp -- the collectives' VJP rules and all_reduce's JVP rule
// (src/autodiff/collective.cpp), rows of the tables in vjp_rules.cpp and jvp_rules.cpp. The
// other collectives are kLinear: forward mode applies them to the tangents.
#pragma once

#include "rules.hpp"

namespace rlx::autodiff::collective {

std::vector<Grad> vjp_all_reduce(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_all_gather(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_reduce_scatter(Builder& b, const Node& n, NodeId dy,
                                     std::span<const char> want);
std::vector<Grad> vjp_broadcast(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_reduce_to_root(Builder& b, const Node& n, NodeId dy,
                                     std::span<const char> want);
std::vector<Grad> vjp_send(Builder& b, const Node& n, NodeId dy, std::span<const char> want);
std::vector<Grad> vjp_recv(Builder& b, const Node& n, NodeId dy, std::span<const char> want);

Grad jvp_all_reduce(Builder& b, const Node& n, std::span<const Grad> t);

} // namespace rlx::autodiff::collective
