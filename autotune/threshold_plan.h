#pragma once
// The plan `--tune off` makes for a conv layer without timing anything: the device's thresholds
// (calibration.h) pick the layout, and the parts its conv solvers declare (UntunedRoles,
// ops/conv/solver.h) pick the solvers, so no solver is named here.
#include <cstddef>
#include <vector>

#include "autotune/records.h"
#include "ops/conv/plan.h"

namespace tunecnn {

// The solvers of `device` in the NCHW chain, by their declared order (registry order on ties).
std::vector<const ConvSolver*> untuned_nchw_chain(Device device);
// The NCHW solvers the layout thresholds weigh CHWN against, in registry order.
std::vector<const ConvSolver*> layout_baseline_solvers(Device device);
// The CHWN solver the layout thresholds weigh against NCHW; nullptr on a device without one.
const ConvSolver* chwn_threshold_solver(Device device);

// Li et al.'s rule: CHWN or NCHW for a forward problem; NCHW when ct/nt are absent and on a
// device without a CHWN solver.
Layout threshold_layout(const ConvProblem& fwd, const DeviceThresholds& thresholds);

// The `off` policy's plan for one layer, all three directions in one layout, each within
// `max_workspace_bytes`:
//   1. CHWN when threshold_layout says so: the CHWN solver;
//   2. else NCHW: each direction the first of the NCHW chain that fits (CPU: Winograd,
//      im2col+GEMM, depthwise_direct; GPU: cuDNN, im2col+GEMM, MEC);
//   3. when some direction has none, the whole layer in a low-memory solver's own layout (the
//      CPU's MEC, NHWC);
//   4. last, the NCHW chain with the direct reference (no workspace) after it.
// A config's "T" (MEC's threshold) is the device's calibrated mec_t when it has one.
ConvLayerPlan threshold_plan(const ConvProblem& fwd, const DeviceThresholds& thresholds,
                             std::size_t max_workspace_bytes);

}  // namespace tunecnn
