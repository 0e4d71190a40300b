#pragma once
// `bench memory`: what a training step holds at its peak, split by use (parameters, optimizer
// state, activations, gradients, workspaces, layout copies) from the allocator, the process's
// peak resident set, and PyTorch's on the same network and batch (issue 29).
namespace tunecnn {

int bench_memory(int argc, const char* const* argv);

}  // namespace tunecnn
