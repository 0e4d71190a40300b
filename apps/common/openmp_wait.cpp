#include "apps/common/openmp_wait.h"

#include <unistd.h>

#include <cstdlib>

namespace tunecnn {

const char* wanted_openmp_wait_policy() {
#ifdef TUNECNN_HAVE_ONEDNN
  return "PASSIVE";
#else
  return nullptr;
#endif
}

void use_passive_openmp_threads(char** argv) {
  const char* policy = wanted_openmp_wait_policy();
  if (policy == nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", policy, 0) != 0) return;
  execv("/proc/self/exe", argv);
  // Still here: the exec failed (no /proc, say). Run on; only the threads' waiting differs.
}

}  // namespace tunecnn
