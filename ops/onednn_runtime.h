#pragma once
// What every oneDNN solver shares (built only with oneDNN, cmake/onednn.cmake): the CPU engine
// and the thread count, set before each call.
#include <dnnl.hpp>

namespace tunecnn {

const dnnl::engine& onednn_cpu_engine();

// Debian's oneDNN runs on OpenMP, we run on TBB: OpenMP's team as wide as TBB's arena, set on the
// calling thread, whose setting oneDNN reads. apps/common/openmp_wait.h keeps OpenMP's threads
// from spinning on the cores between calls.
void match_onednn_threads_to_ours();

}  // namespace tunecnn
