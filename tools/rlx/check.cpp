// tools/rlx/check.cpp -- `rlx check FILE`: parse, verify and print a graph (text IR, JSON,
// inspect).
#include "args.hpp"
#include "commands.hpp"
#include "graph_file.hpp"

#include <rlx/ir/dot.hpp>
#include <rlx/ir/json.hpp>
#include <rlx/ir/text.hpp>
#include <rlx/runtime.hpp>

#include <iostream>

namespace rlx::cli {

namespace {

constexpr OptionSpec kCheckOptions[] = {
    {"--help", false, false}, {"--json", false, false}, {"--inspect", false, false},
    {"--dot", false, false},  {"--lir", false, false},  {"--bind", true, true},
};

} // namespace

int check_command(std::span<const std::string> args) {
  ParsedArgs a = parse_args(args, kCheckOptions);
  if (a.has("--help")) {
    std::cout << command_usage("check");
    return 0;
  }
  if (a.positional.empty()) throw UsageError("missing the graph FILE");
  if (a.positional.size() > 1)
    throw UsageError("expected one graph FILE, got " + std::to_string(a.positional.size()) +
                     " operands");
  if (int(a.has("--json")) + int(a.has("--inspect")) + int(a.has("--dot")) > 1)
    throw UsageError("--json, --inspect and --dot cannot be combined");
  if (a.has("--lir") && a.has("--json")) throw UsageError("--lir prints text or --dot, not JSON");

  const std::string& path = a.positional[0];
  ir::Graph g = load_graph(path);
  verify_graph(g, path);
  if (a.has("--bind")) {
    g = bind_graph(g, parse_bindings(g, a.values("--bind")), path);
    verify_graph(g, path);
  }

  if (a.has("--lir")) {
    if (g.has_dynamic_dims())
      throw Error(ErrorKind::Bind, path + ": --lir plans buffers of a static graph; bind its "
                                          "dynamic dims with --bind SYMBOL=SIZE");
    ir::LirModule lir = plan_for(g, Backend::Jit); // the plan the JIT runs
    ir::verify_plan(lir);
    std::cout << (a.has("--dot") ? ir::to_dot(lir) : lir.to_string());
  } else if (a.has("--dot")) {
    // A static graph's clusters: the steps of several nodes the JIT would make of it as it is.
    ir::DotOptions opts;
    if (!g.has_dynamic_dims())
      opts.clusters = ir::step_clusters(ir::plan_lir(g, plan_options(Backend::Jit)));
    std::cout << ir::to_dot(g, opts);
  } else if (a.has("--json"))
    std::cout << ir::to_json(g, /*pretty=*/true);
  else if (a.has("--inspect"))
    std::cout << g.inspect();
  else
    std::cout << ir::to_text(g);
  std::cout.flush();
  return 0;
}

} // namespace rlx::cli
