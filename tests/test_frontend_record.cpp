// tests/test_frontend_record.cpp -- recording Tensor ops through Graph builders (ir::NodeSink and
// the frontend's Recorder), and to_graph, the one extractor eval, jit and grad share.
#include "frontend/impl.hpp"
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <doctest/doctest.h>

using rlx::DType;
using rlx::Tensor;
namespace ir = rlx::ir;

namespace {

/// A sink that keeps what it is given.
struct ListSink final : ir::NodeSink {
  std::vector<ir::Shape> shapes;
  std::vector<ir::OpKind> kinds;
  std::vector<std::vector<ir::NodeId>> inputs;
  std::size_t len() const override { return shapes.size(); }
  const ir::Shape& shape(ir::NodeId id) const override { return shapes.at(id.index); }
  ir::NodeId append(ir::Op op, std::vector<ir::NodeId> in, ir::Shape shape,
                    const rlx::Loc&) override {
    shapes.push_back(std::move(shape));
    kinds.push_back(op.kind());
    inputs.push_back(std::move(in));
    return ir::NodeId(uint32_t(shapes.size() - 1));
  }
  void truncate(std::size_t n) override {
    shapes.resize(n);
    kinds.resize(n);
    inputs.resize(n);
  }
};

ir::Shape f32(std::vector<int64_t> dims) { return ir::Shape::of(dims, DType::F32); }

} // namespace

TEST_CASE("record: a graph over a NodeSink hands every builder's nodes to the sink and reads "
          "shapes back from it") {
  ListSink sink;
  sink.shapes = {f32({2, 3}), f32({3, 4})};
  sink.kinds = {ir::OpKind::Input, ir::OpKind::Input};
  sink.inputs.resize(2);
  ir::Graph g(sink, "sunk");
  ir::NodeId y =
      g.linear_bias_act(ir::NodeId(0), ir::NodeId(1), std::nullopt, ir::Activation::Relu);
  CHECK(g.len() == 4);
  CHECK(y.index == 3);
  CHECK(g.shape(y) == f32({2, 4}));
  CHECK(sink.kinds[2] == ir::OpKind::MatMul);
  CHECK(sink.inputs[2] == std::vector<ir::NodeId>{ir::NodeId(0), ir::NodeId(1)});
  CHECK(sink.kinds[3] == ir::OpKind::Relu);
  CHECK(g.nodes().empty()); // the graph itself stores nothing
}

TEST_CASE("record: a composite builder that fails rolls its nodes back out of the sink") {
  ListSink sink;
  sink.shapes = {f32({2, 3}), f32({3, 4}), f32({5, 2, 4})};
  sink.kinds.assign(3, ir::OpKind::Input);
  sink.inputs.resize(3);
  ir::Graph g(sink, "sunk");
  // The bias broadcasts the product to [5, 2, 4]: linear_bias refuses after appending two nodes.
  rlx::test::check_error([&] { g.linear_bias(ir::NodeId(0), ir::NodeId(1), ir::NodeId(2)); },
                         rlx::ErrorKind::Shape, "linear_bias: bias f32[5,2,4]");
  CHECK(sink.len() == 3);
}

TEST_CASE("record: reading a node of a graph over a sink is an error naming the graph") {
  ListSink sink;
  sink.shapes = {f32({2})};
  sink.kinds = {ir::OpKind::Input};
  sink.inputs.resize(1);
  ir::Graph g(sink, "sunk");
  rlx::test::check_error([&] { (void)g.node(ir::NodeId(0)); }, rlx::ErrorKind::Unsupported,
                         "node: graph @sunk hands its nodes to a recorder");
  rlx::test::check_error([&] { (void)g.shape(ir::NodeId(5)); }, rlx::ErrorKind::Value,
                         "node %5 is not in graph @sunk (it has 1 nodes)");
}

TEST_CASE("record: a Tensor op is one pending value whose inputs are the operands themselves") {
  Tensor a = rlx::tensor({1.f, 2.f}), b = rlx::tensor({3.f, 4.f});
  Tensor c = a + b;
  const rlx::detail::TensorImpl& impl = *c.impl();
  REQUIRE(impl.op.has_value());
  CHECK(impl.op->kind() == ir::OpKind::Add);
  REQUIRE(impl.inputs.size() == 2);
  CHECK(impl.inputs[0] == a.impl());
  CHECK(impl.inputs[1] == b.impl());
  CHECK(impl.pending == 1);
  CHECK(c.to_vector<float>() == std::vector<float>{4.f, 6.f});
}

TEST_CASE("record: nodes a builder appended that the result does not use are not kept") {
  Tensor a = rlx::tensor({1.f, 2.f});
  Tensor y = rlx::apply({a}, [](ir::Graph& g, std::span<const ir::NodeId> in) {
    (void)g.exp(in[0]); // dead
    return g.neg(in[0]);
  });
  REQUIRE(y.impl()->inputs.size() == 1);
  CHECK(y.impl()->inputs[0] == a.impl());
  CHECK(y.to_vector<float>() == std::vector<float>{-1.f, -2.f});
}

TEST_CASE("record: a builder that adds a leaf inside apply is an error naming the user's line") {
  Tensor a = rlx::tensor({1.f});
  rlx::Loc here = rlx::Loc::current();
  auto add_leaf = [](ir::Graph& g, std::span<const ir::NodeId> in) {
    return g.add(in[0], g.input("extra", f32({1})));
  };
  rlx::test::check_error([&] { (void)rlx::apply({a}, add_leaf, here); }, rlx::ErrorKind::Value,
                         "apply: the builder appended input \"extra\"");
  rlx::test::check_error([&] { (void)rlx::apply({a}, add_leaf, here); }, rlx::ErrorKind::Value,
                         "test_frontend_record.cpp:" + std::to_string(here.line()));
}

TEST_CASE("record: a builder returning a node outside its graph is an error, not a crash") {
  Tensor a = rlx::tensor({1.f});
  rlx::test::check_error(
      [&] {
        (void)rlx::apply({a},
                         [](ir::Graph&, std::span<const ir::NodeId>) { return ir::NodeId(7); });
      },
      rlx::ErrorKind::Value, "apply: the builder returned node %7");
}

TEST_CASE("record: to_graph gives eval the pending values with computed leaves as inputs and "
          "shared values as extra outputs") {
  Tensor a = rlx::tensor({1.f, 2.f});
  Tensor shared = a * 2.0f;
  Tensor root = shared + 1.0f;
  rlx::detail::GraphPolicy policy;
  policy.name = "eval";
  policy.share_pending = true;
  std::vector<std::shared_ptr<rlx::detail::TensorImpl>> roots{root.impl()};
  rlx::detail::ExtractedGraph ex;
  {
    std::lock_guard lock(rlx::detail::eval_mutex());
    ex = rlx::detail::to_graph(roots, policy);
  }
  CHECK(ex.graph.input_id("in0").has_value());
  REQUIRE(ex.leaves.size() == 1);
  CHECK(ex.leaves[0] == a.impl()->buffer);
  REQUIRE(ex.outputs.size() == 2); // the root, then `shared`, which a handle still holds
  CHECK(ex.outputs[0] == root.impl());
  CHECK(ex.outputs[1] == shared.impl());
  CHECK(ex.graph.outputs.size() == 2);
}

TEST_CASE("record: to_graph gives a trace its placeholders as args and captures as params") {
  Tensor captured = rlx::tensor({10.f, 20.f});
  std::vector<rlx::Shape> shapes{f32({2}), f32({2})};
  rlx::detail::ExtractedGraph t = rlx::detail::trace_graph(
      shapes,
      [&](std::span<const Tensor> ph) { return std::vector<Tensor>{ph[1] * captured, ph[0]}; },
      "traced", "test", rlx::Loc::current());
  CHECK(t.graph.name == "traced");
  CHECK(t.graph.input_id("arg0")->index == 0);
  CHECK(t.graph.input_id("arg1")->index == 1);
  REQUIRE(t.graph.param_id("c0").has_value());
  REQUIRE(t.leaves.size() == 1);
  CHECK(t.leaves[0] == captured.impl()->buffer);
  REQUIRE(t.graph.outputs.size() == 2);
  CHECK(t.graph.node(t.graph.outputs[0]).op.kind() == ir::OpKind::Mul);
  CHECK(t.graph.outputs[1] == *t.graph.input_id("arg0"));
}
