#include "autotune/fingerprint.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>
#include <thread>

#include "core/cuda_runtime.h"
#include "core/error.h"
#include "core/threading.h"
#include "ops/vendor_versions.h"

namespace tunecnn {
namespace {

// The ISA extensions that matter to our kernels and to OpenBLAS's kernel choice.
const std::vector<std::string> kInterestingFlags = {
    "sse4_2",   "avx",      "avx2",        "fma",      "f16c", "avx512f",
    "avx512bw", "avx512vl", "avx512_vnni", "amx_tile", "neon", "asimd"};

std::string cpuinfo_field(const std::string& field) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "";
}

std::vector<std::string> present_flags() {
  std::istringstream words(cpuinfo_field("flags") + " " + cpuinfo_field("Features"));
  std::set<std::string> flags;
  for (std::string w; words >> w;) flags.insert(w);
  std::vector<std::string> present;
  for (const std::string& flag : kInterestingFlags)
    if (flags.count(flag)) present.push_back(flag);
  return present;
}

long cache_bytes(int name) {
  const long value = sysconf(name);
  return value > 0 ? value : 0;
}

}  // namespace

CpuFingerprint cpu_fingerprint() {
  CpuFingerprint fp;
  fp.model = cpuinfo_field("model name");
  if (fp.model.empty()) fp.model = "unknown CPU";
  fp.isa = present_flags();
  fp.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
  fp.threads_used = num_threads();
  fp.l2_bytes = cache_bytes(_SC_LEVEL2_CACHE_SIZE);
  fp.l3_bytes = cache_bytes(_SC_LEVEL3_CACHE_SIZE);
  fp.blas = openblas_get_config();
  fp.onednn = onednn_version();
  fp.framework_version = TUNECNN_VERSION;
  return fp;
}

std::string CpuFingerprint::summary() const {
  std::ostringstream out;
  out << model << ", " << threads_used << "/" << hardware_threads << " threads, L2 "
      << l2_bytes / 1024 << " KiB, L3 " << l3_bytes / 1024 << " KiB, ISA";
  for (const std::string& flag : isa) out << " " << flag;
  out << "; " << blas << (onednn.empty() ? "" : "; oneDNN " + onednn) << "; tunecnn " << framework_version;
  return out.str();
}

std::map<std::string, std::string> CpuFingerprint::fields() const {
  std::string isa_joined;
  for (const std::string& flag : isa) isa_joined += (isa_joined.empty() ? "" : " ") + flag;
  std::map<std::string, std::string> out{{"model", model},
                                         {"isa", isa_joined},
                                         {"hardware_threads", std::to_string(hardware_threads)},
                                         {"threads_used", std::to_string(threads_used)},
                                         {"l2_bytes", std::to_string(l2_bytes)},
                                         {"l3_bytes", std::to_string(l3_bytes)},
                                         {"blas", blas},
                                         {"framework_version", framework_version}};
  if (!onednn.empty()) out["onednn"] = onednn;
  return out;
}

std::string device_id(const std::map<std::string, std::string>& fields, std::string_view prefix) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a 64 offset basis
  const auto mix = [&hash](std::string_view text) {
    for (const unsigned char c : text) {
      hash ^= c;
      hash *= 1099511628211ull;  // FNV-1a 64 prime
    }
  };
  for (const auto& [name, value] : fields) {  // std::map: already in key order
    mix(name);
    mix("=");
    mix(value);
    mix("\n");
  }
  std::ostringstream out;
  out << prefix << "-" << std::hex << std::setw(16) << std::setfill('0') << hash;
  return out.str();
}

DeviceIdentity device_identity(Device device) {
  if (device == Device::cpu) {
    std::map<std::string, std::string> fields = cpu_fingerprint().fields();
    return {device_id(fields), std::move(fields)};
  }
  const std::optional<GpuFingerprint> gpu = gpu_fingerprint();
  TUNECNN_CHECK(gpu.has_value(), "tuning for the GPU: no CUDA device is available",
                cuda_built() ? " (is the NVIDIA driver loaded?)"
                             : " (this build has no CUDA backend; reconfigure with -DTUNECNN_CUDA=ON)");
  std::map<std::string, std::string> fields = gpu->fields();
  return {device_id(fields, "cuda"), std::move(fields)};
}

}  // namespace tunecnn
