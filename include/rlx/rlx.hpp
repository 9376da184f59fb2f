// include/rlx/rlx.hpp -- umbrella header.
#pragma once

#include "rlx/error.hpp"
#include "rlx/interp.hpp"
#include "rlx/io/npy.hpp"
#include "rlx/ir/dtype.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/infer.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/node.hpp"
#include "rlx/ir/op.hpp"
#include "rlx/ir/shape.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "rlx/jit.hpp"
#include "rlx/passes.hpp"
#include "rlx/runtime.hpp"
#include "rlx/tensor.hpp"
