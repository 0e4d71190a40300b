#pragma once
// What makes timings comparable between two machines: the CPU, its ISA extensions our kernels
// use, the threads we run with, cache sizes, the BLAS, and our own version; for a GPU, the card
// and the driver and library versions. Printed by the apps and digested into the id of a
// device's section in the tuning cache.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace tunecnn {

struct CpuFingerprint {
  std::string model;             // "/proc/cpuinfo model name"
  std::vector<std::string> isa;  // of {sse4_2, avx, avx2, fma, avx512f, ...} those present
  int hardware_threads = 0;
  int threads_used = 0;
  long l2_bytes = 0, l3_bytes = 0;
  std::string blas;    // OpenBLAS config string
  std::string onednn;  // oneDNN's version; empty in a build without it
  std::string framework_version;

  std::string summary() const;  // one line, for logs
  // The fields as the tuning cache stores them: model, isa (space-joined), hardware_threads,
  // threads_used, l2_bytes, l3_bytes, blas, onednn (only in a build with oneDNN, so the ids of
  // builds without it stay as they were), framework_version.
  std::map<std::string, std::string> fields() const;
};

CpuFingerprint cpu_fingerprint();

struct GpuFingerprint {
  std::string name;                // "NVIDIA H200"
  int sm_count = 0;
  std::string compute_capability;  // "9.0"
  std::int64_t memory_bytes = 0;
  std::string driver, cuda_runtime, cublas, cudnn;  // versions, "12.4" / "9.1.0"
  std::string framework_version;

  std::string summary() const;
  // name, sm_count, compute_capability, memory_bytes, driver, cuda_runtime, cublas, cudnn,
  // framework_version: the fields of a GPU device section (device_id(fields, "cuda")).
  std::map<std::string, std::string> fields() const;
};

// The fingerprint of CUDA device `index`; nullopt when built without CUDA or when no such GPU is
// present (no driver, fewer devices).
std::optional<GpuFingerprint> gpu_fingerprint(int index = 0);

// A short stable name for a device: prefix + "-" + 16 hex digits of FNV-1a 64 over the fields in
// key order, each hashed as "name=value\n". Equal fields give equal ids on every machine and
// build (no std::hash, whose value is unspecified); any changed field gives a new id, so timings
// from a different setup are never mistaken for this one's.
std::string device_id(const std::map<std::string, std::string>& fields,
                      std::string_view prefix = "cpu");

// The device section a run on `device` tunes into: its id and fingerprint fields (the CPU's with
// the threads in use now; the first GPU's). Throws Error for the GPU when none is usable.
struct DeviceIdentity {
  std::string id;
  std::map<std::string, std::string> fields;
};
DeviceIdentity device_identity(Device device);

}  // namespace tunecnn
