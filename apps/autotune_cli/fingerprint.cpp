// autotune fingerprint: what this machine's devices are, field by field, as the tuning cache
// records them, and the id of each device's section. Tells a user which entries of a copied
// cache this machine would use, and names the GPU, driver and library versions a run saw.
#include <ostream>

#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/common/device_check.h"
#include "core/cuda_runtime.h"

namespace tunecnn {
namespace {

void print_device(const char* kind, const DeviceIdentity& device, std::ostream& out) {
  out << kind << " " << device.id << "\n";
  for (const auto& [name, value] : device.fields) out << "  " << name << ": " << value << "\n";
}

}  // namespace

int run_fingerprint(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli("autotune fingerprint",
                     "Prints this machine's device fingerprints, the fields the tuning cache "
                     "keeps per device, and each device's section id: the CPU (under --threads) "
                     "and, in a build with CUDA, the first GPU when one is usable.");
  device_option(cli, "require the GPU: exit 1 with the reason when none is usable");
  cli.common_options();
  if (!cli.parse(args, out, 0, 0)) return 0;
  const Device device_kind = parse_device_option(cli.options());
  require_device(device_kind);
  apply_threads(cli.options());
  print_device("cpu", this_device(Device::cpu), out);
  if (cuda_device_count() > 0)
    print_device("gpu", this_device(Device::cuda), out);
  else
    err << "no GPU: " << cuda_unavailable_reason() << "\n";
  return 0;
}

}  // namespace tunecnn
