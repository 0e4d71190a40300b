#include "ops/onednn_runtime.h"

#include <omp.h>

#include "core/threading.h"

namespace tunecnn {

const dnnl::engine& onednn_cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void match_onednn_threads_to_ours() {
  omp_set_num_threads(num_threads());
}

}  // namespace tunecnn
