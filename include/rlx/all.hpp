// include/rlx/all.hpp -- every public header: rlx/rlx.hpp plus the IR (graphs, HIR, LIR, text,
// JSON, dot), passes, graph autodiff, the interpreter, executables and rlx/apply.hpp. Slower to
// compile than rlx/rlx.hpp (it parses the IR's attribute variant); code that builds graphs
// includes what it uses, or this.
#pragma once

#include "rlx/apply.hpp"
#include "rlx/autodiff.hpp"
#include "rlx/custom_op.hpp"
#include "rlx/interp.hpp"
#include "rlx/ir/dot.hpp"
#include "rlx/ir/dtype.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/infer.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/lir.hpp"
#include "rlx/ir/module.hpp"
#include "rlx/ir/node.hpp"
#include "rlx/ir/op.hpp"
#include "rlx/ir/shape.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "rlx/passes.hpp"
#include "rlx/rlx.hpp"
#include "rlx/runtime.hpp"
#include "rlx/ssm.hpp"
