// include/rlx/rlx.hpp -- the everyday umbrella: numpy-like Tensor code, rlx::jit, the function
// transforms over pytrees (grad, value_and_grad, jvp, vjp, vmap), rlx::optim, rlx::fft,
// rlx::linalg, rlx::quant, rlx::random, rlx::nn's layers and losses, .npy files and the
// process-wide settings.
// It parses none of the IR's internals, so it compiles about as fast as an Eigen hello-world
// (docs/performance.md). The IR, passes, autodiff on graphs, executables and rlx::apply /
// rlx::custom_fn are included explicitly (rlx/apply.hpp, rlx/runtime.hpp, rlx/ir/...), or all
// at once with rlx/all.hpp.
#pragma once

#include "rlx/display.hpp"
#include "rlx/dist.hpp"
#include "rlx/error.hpp"
#include "rlx/fft.hpp"
#include "rlx/gguf.hpp"
#include "rlx/grad.hpp"
#include "rlx/host.hpp"
#include "rlx/io/file.hpp"
#include "rlx/io/npy.hpp"
#include "rlx/jit.hpp"
#include "rlx/linalg.hpp"
#include "rlx/memory.hpp"
#include "rlx/nn.hpp"
#include "rlx/optim.hpp"
#include "rlx/pytree.hpp"
#include "rlx/quant.hpp"
#include "rlx/quant_packed.hpp"
#include "rlx/random.hpp"
#include "rlx/sampling.hpp"
#include "rlx/scan.hpp"
#include "rlx/settings.hpp"
#include "rlx/splat.hpp"
#include "rlx/tensor.hpp"
#include "rlx/vq.hpp"
