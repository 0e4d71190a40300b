#include "apps/bench/bench_device.h"

#include <optional>

#include "autotune/fingerprint.h"
#include "core/error.h"

namespace tunecnn {

Device parse_bench_device(const std::string& text) {
  try {
    return parse_device(text);
  } catch (const Error& e) {
    TUNECNN_FAIL("--device: ", e.message());
  }
}

void print_gpu_fingerprint(std::ostream& out, Device device) {
  if (device != Device::cuda) return;
  if (const std::optional<GpuFingerprint> card = gpu_fingerprint()) out << "# gpu: " << card->summary() << "\n";
}

}  // namespace tunecnn
