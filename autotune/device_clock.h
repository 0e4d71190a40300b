#pragma once
// The clock the tuner times candidates with (TunerOptions::clock), per device. On the CPU it is
// the steady clock. On the GPU it reads CUDA events recorded on the compute stream: each reading
// records an event, waits for it, and adds the GPU time since the previous reading, so the
// interval around a call is the time the GPU took to run everything the call queued (launch gaps
// included), not the host's time to queue it.
#include <functional>

#include "core/types.h"

namespace tunecnn {

// Seconds since an arbitrary origin. Throws Error for the GPU in a build without CUDA or on a
// machine without a GPU.
std::function<double()> device_clock(Device device);

}  // namespace tunecnn
