#pragma once
// The --device option shared by the benches that run on either device (conv, layout, softmax,
// plans): its parsing, the clock that times it, and the GPU line of the header.
#include <functional>
#include <ostream>
#include <string>

#include "core/types.h"

namespace tunecnn {

// "cpu" or "cuda"; anything else an Error that names --device.
Device parse_bench_device(const std::string& text);

// The device's clock (autotune/device_clock.h: the steady clock, or CUDA events). Taken before
// any work, so that a build or a machine without a GPU is an error that says so before the table.
std::function<double()> bench_clock(Device device);

// "# gpu: <fingerprint>" for the GPU; nothing for the CPU.
void print_gpu_fingerprint(std::ostream& out, Device device);

}  // namespace tunecnn
