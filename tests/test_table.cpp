// tests/test_table.cpp -- the op table is complete and consistent: names, families, enums, rules.
#include <rlx/all.hpp>

#include <doctest/doctest.h>

#include <set>

using namespace rlx;
using namespace rlx::ir;

TEST_CASE("table: every op kind has a unique name that parses back") {
  std::set<std::string_view> names;
  for (std::size_t k = 0; k < kNumOps; ++k) {
    OpKind kind = static_cast<OpKind>(k);
    INFO(op_name(kind));
    CHECK_FALSE(op_name(kind).empty());
    CHECK(names.insert(op_name(kind)).second);
    CHECK(parse_op_kind(op_name(kind)) == kind);
    CHECK_FALSE(family_name(op_family(kind)).empty());
    CHECK(op_info(kind).arity >= -1);
    // Default attributes are the kind's own struct.
    CHECK(Op(kind).any_attrs().index() == ir::detail::kAttrIndex[k]);
  }
  CHECK_FALSE(parse_op_kind("no_such_op").has_value());
}

TEST_CASE("table: leaves have no inputs and every other kind has a shape rule") {
  for (std::size_t k = 0; k < kNumOps; ++k) {
    OpKind kind = static_cast<OpKind>(k);
    INFO(op_name(kind));
    bool leaf = has_trait(kind, kLeaf);
    CHECK(leaf == (op_family(kind) == Family::Leaf));
    if (leaf)
      CHECK(op_info(kind).arity == 0);
    else
      CHECK(has_shape_rule(kind));
  }
}

TEST_CASE("table: the API enums map to op kinds and back") {
  for (std::size_t i = 0; i < enum_count<Activation>(); ++i) {
    Activation a = static_cast<Activation>(i);
    INFO(enum_name(a));
    CHECK(op_family(to_op_kind(a)) == Family::EwUnary);
    CHECK(as_activation(to_op_kind(a)) == a);
  }
  for (std::size_t i = 0; i < enum_count<BinaryOp>(); ++i) {
    BinaryOp b = static_cast<BinaryOp>(i);
    CHECK(op_family(to_op_kind(b)) == Family::EwBinary);
    CHECK(as_binary_op(to_op_kind(b)) == b);
  }
  for (std::size_t i = 0; i < enum_count<ReduceOp>(); ++i) {
    ReduceOp r = static_cast<ReduceOp>(i);
    CHECK(op_family(to_op_kind(r)) == Family::Reduce);
    CHECK(as_reduce_op(to_op_kind(r)) == r);
  }
  CHECK(enum_name(Activation::GeluApprox) == "GeluApprox");
  CHECK(to_op_kind(Activation::GeluApprox) == OpKind::GeluApprox);
  CHECK(to_op_kind(BinaryOp::Ge) == OpKind::Ge);
  CHECK(to_op_kind(ReduceOp::Mean) == OpKind::ReduceMean);
  CHECK_FALSE(as_activation(OpKind::Add).has_value());
  CHECK(parse_enum<MaskType>("SlidingWindow") == MaskType::SlidingWindow);
  CHECK_FALSE(parse_enum<MaskType>("sliding").has_value());
}

TEST_CASE("table: comparison and logical ops are marked bool-valued and non-differentiable") {
  for (OpKind k : {OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge,
                   OpKind::And, OpKind::Or}) {
    INFO(op_name(k));
    CHECK(has_trait(k, kBoolResult));
    CHECK(has_trait(k, kNonDifferentiable));
  }
  CHECK(has_trait(OpKind::Add, kCommutative));
  CHECK_FALSE(has_trait(OpKind::Sub, kCommutative));
}

TEST_CASE("table: the trait columns are consistent with each other and the families") {
  for (std::size_t k = 0; k < kNumOps; ++k) {
    OpKind kind = static_cast<OpKind>(k);
    INFO(op_name(kind));
    if (has_trait(kind, kFed)) CHECK(has_trait(kind, kLeaf));
    if (has_trait(kind, kZeroGrad)) {
      CHECK_FALSE(has_trait(kind, kNonDifferentiable));
      CHECK(op_family(kind) == Family::EwUnary);
    }
    if (has_trait(kind, kComposite)) CHECK_FALSE(has_trait(kind, kLeaf));
    if (has_trait(kind, kLinear)) CHECK_FALSE(has_trait(kind, kNonDifferentiable));
  }
  CHECK(has_trait(OpKind::Input, kFed));
  CHECK(has_trait(OpKind::Param, kFed));
  CHECK_FALSE(has_trait(OpKind::Constant, kFed));
  CHECK(has_trait(OpKind::Softmax, kComposite));
  CHECK_FALSE(has_trait(OpKind::MatMul, kComposite));
  CHECK(has_trait(OpKind::Floor, kZeroGrad));
  CHECK(has_trait(OpKind::ReduceSum, kLinear));
  CHECK_FALSE(has_trait(OpKind::ReduceMax, kLinear));
}
