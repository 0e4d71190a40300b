// The GPU half of the device fingerprint. Everything that changes kernel timings is in it: the
// card (name, SM count, compute capability, memory) and the software stack under us (driver,
// CUDA runtime, cuBLAS, cuDNN), since a cuDNN upgrade alone can change which algorithm wins.
#include "autotune/fingerprint.h"

#include <sstream>

#ifdef TUNECNN_HAVE_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#endif

#include "core/cuda_runtime.h"

namespace tunecnn {
namespace {

// CUDA encodes versions as 1000 * major + 10 * minor (12040 -> "12.4").
[[maybe_unused]] std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace

std::string GpuFingerprint::summary() const {
  std::ostringstream out;
  out << name << ", " << sm_count << " SMs, compute " << compute_capability << ", "
      << memory_bytes / (1024 * 1024) << " MiB; driver " << driver << ", CUDA " << cuda_runtime
      << ", cuBLAS " << cublas << ", cuDNN " << cudnn << "; tunecnn " << framework_version;
  return out.str();
}

std::map<std::string, std::string> GpuFingerprint::fields() const {
  return {{"name", name},
          {"sm_count", std::to_string(sm_count)},
          {"compute_capability", compute_capability},
          {"memory_bytes", std::to_string(memory_bytes)},
          {"driver", driver},
          {"cuda_runtime", cuda_runtime},
          {"cublas", cublas},
          {"cudnn", cudnn},
          {"framework_version", framework_version}};
}

#ifdef TUNECNN_HAVE_CUDA

std::optional<GpuFingerprint> gpu_fingerprint(int index) {
  if (index < 0 || index >= cuda_device_count()) return std::nullopt;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls are not blamed for it
    return std::nullopt;
  }
  GpuFingerprint fp;
  fp.name = prop.name;
  fp.sm_count = prop.multiProcessorCount;
  fp.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  fp.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  fp.driver = cuda_version_text(driver);
  fp.cuda_runtime = cuda_version_text(runtime);
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  fp.cublas = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  // cudnnGetVersion: major * 10000 + minor * 100 + patch since cuDNN 9 (major * 1000 before).
  const std::size_t cudnn = cudnnGetVersion();
  const std::size_t cudnn_major_unit = cudnn >= 90000 ? 10000 : 1000;
  fp.cudnn = std::to_string(cudnn / cudnn_major_unit) + "." +
             std::to_string(cudnn % cudnn_major_unit / 100) + "." + std::to_string(cudnn % 100);
  fp.framework_version = TUNECNN_VERSION;
  return fp;
}

#else

std::optional<GpuFingerprint> gpu_fingerprint(int) {
  return std::nullopt;
}

#endif

}  // namespace tunecnn
