#pragma once
// The --device option shared by the benches that run on either device (conv, layout, pool,
// softmax, depthwise, plans): its parsing and the GPU line of the header. They time with
// device_clock (autotune/device_clock.h), taken before any work, so that a build or a machine
// without a GPU is an error that says so before the table.
#include <ostream>
#include <string>

#include "core/types.h"

namespace tunecnn {

// "cpu" or "cuda"; anything else an Error that names --device.
Device parse_bench_device(const std::string& text);

// "# gpu: <fingerprint>" for the GPU; nothing for the CPU.
void print_gpu_fingerprint(std::ostream& out, Device device);

}  // namespace tunecnn
