#pragma once
// What makes timings comparable between two machines: the CPU, its ISA extensions our kernels
// use, the threads we run with, cache sizes, the BLAS, and our own version. Printed by the apps
// and, later, the key of a device's section in the tuning cache.
#include <string>
#include <vector>

namespace tunecnn {

struct CpuFingerprint {
  std::string model;                 // "/proc/cpuinfo model name"
  std::vector<std::string> isa;      // of {sse4_2, avx, avx2, fma, avx512f, ...} those present
  int hardware_threads = 0;
  int threads_used = 0;
  long l2_bytes = 0, l3_bytes = 0;
  std::string blas;                  // OpenBLAS config string
  std::string framework_version;

  std::string summary() const;  // one line, for logs
};

CpuFingerprint cpu_fingerprint();

}  // namespace tunecnn
