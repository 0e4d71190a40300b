#pragma once
// `bench depthwise`: the depthwise methods of Qin et al. (PAPERS.md section 3) on MobileNet's
// depthwise layers (their Table III: every method, forward and backward) and a whole MobileNet
// training step split by layer type under each method (their Table IV).
namespace tunecnn {

// argv[0] is "depthwise"; returns the exit status.
int bench_depthwise(int argc, const char* const* argv);

}  // namespace tunecnn
