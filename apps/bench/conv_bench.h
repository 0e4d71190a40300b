#pragma once
// `bench conv`: times every applicable conv solver, config and direction on a named set of
// layers, side by side with PyTorch, and reports medians, GFLOP/s, workspace and peak memory.
namespace tunecnn {

// argv[0] is "conv"; returns the exit status.
int bench_conv(int argc, const char* const* argv);

}  // namespace tunecnn
