#pragma once
// One oneDNN convolution primitive for one problem, activation layout and choice of
// implementation, with the reorders between our plain tensors and the formats it runs in. Built
// once (JIT code generation takes milliseconds) and kept for the life of the process, so a plan
// runs the same primitive every step. Used by OneDnnSolver (ops/conv/onednn.h) only.
#include <string>
#include <vector>

#include "ops/conv/solver.h"

namespace tunecnn {

// Which of oneDNN's ways to run a problem. `blocked`: the activations are reordered into the
// format the implementation prefers (nChw16c, say) and back inside each call, which is what the
// fastest kernels want; otherwise they stay in the layer's layout. Weights are always reordered
// to the implementation's format, inside the call: they are small beside the activations, and our
// optimizer keeps them [oc, ic/g, kh, kw]. `impl` counts oneDNN's implementations for the
// problem in oneDNN's order of preference, leaving out its reference code.
struct OneDnnChoice {
  bool blocked = false;
  bool winograd = false;
  int impl = 0;
};

// The implementations oneDNN offers for `problem` in `layout` with that choice of activation
// format and algorithm, by name ("brgconv:avx512_core", "x64:gemm:jit", ...): empty when it
// offers none but its reference code.
std::vector<std::string> onednn_implementations(const ConvProblem& problem, Layout layout,
                                                bool blocked, bool winograd);

// Scratchpad plus the reordered copies one call of that primitive needs: what run_onednn() takes.
std::size_t onednn_workspace_bytes(const ConvProblem& problem, Layout layout, const OneDnnChoice& choice);

// How many primitives this process has built: each problem, layout and choice is built once.
std::size_t onednn_primitives_built();

void run_onednn(const ConvProblem& problem, Layout layout, const OneDnnChoice& choice,
                const ConvArgs& args, Workspace workspace);

}  // namespace tunecnn
