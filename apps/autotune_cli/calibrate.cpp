// autotune calibrate: measures this device's thresholds (MEC's T, the layout thresholds Ct/Nt,
// transform bandwidths) once and keeps them in the cache, so `--tune off` can decide layers it
// never profiled. --device cuda measures the GPU's (MEC's T and the transforms; calibration.h).
#include <ostream>

#include "apps/autotune_cli/describe.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/common/device_check.h"
#include "autotune/calibration.h"
#include "autotune/tuning_cache.h"

namespace tunecnn {

int run_calibrate(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli("autotune calibrate",
                     "Measures this device's thresholds (MEC's T; Li et al.'s layout thresholds "
                     "Ct and Nt; layout-transform bandwidths), prints them and stores them in "
                     "the tuning cache under this device, replacing earlier ones. On the GPU "
                     "(--device cuda) Ct and Nt weigh the GPU's direct_chwn against cuDNN, over "
                     "C and N up to 256.");
  device_option(cli, "the GPU's thresholds, stored in the GPU's own section of the cache");
  cli.common_options();
  if (!cli.parse(args, out, 0, 0)) return 0;
  const Device device_kind = parse_device_option(cli.options());
  require_device(device_kind);
  apply_threads(cli.options());
  const DeviceIdentity device = this_device(device_kind);
  const std::filesystem::path path = tune_cache_path(cli.options());

  CalibrationOptions options;
  options.device = device_kind;
  options.progress = [&out](const std::string& line) { out << "  " << line << "\n" << std::flush; };
  out << "calibrating " << device.id << " (" << fingerprint_summary(device.fields) << ")\n";
  const DeviceThresholds thresholds = calibrate_device(options);
  out << "thresholds: " << thresholds_summary(thresholds) << "\n";

  const LoadedTuningCache written = update_tuning_cache_file(path, [&](TuningCache& cache) {
    cache.set_thresholds(device.id, device.fields, thresholds);
  });
  for (const std::string& warning : written.warnings) err << "warning: " << warning << "\n";
  out << "stored in " << path.string() << "\n";
  return 0;
}

}  // namespace tunecnn
