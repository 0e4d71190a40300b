// autotune show [F]: every device section of a cache, its thresholds and decisions. Without F it
// shows what `train` reads: the user's cache over the system cache, each entry marked with the
// layer it comes from whenever a system cache is in use.
#include <functional>
#include <ostream>

#include "apps/autotune_cli/cache_files.h"
#include "apps/autotune_cli/describe.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/autotune_cli/text_table.h"

namespace tunecnn {
namespace {

// The layer a device's entry comes from, "user" or "system"; empty when there is only one layer.
using LayerOf = std::function<std::string(const std::string& device_id, const std::string& key)>;

void print_entries(const DeviceRecord& device, const LayerOf& layer_of, std::ostream& out) {
  std::vector<std::string> columns = {"key",       "solver",     "config", "layout",
                                      "median ms", "candidates", "date",   "host"};
  if (layer_of) columns.push_back("layer");
  TextTable table(columns, {"median ms", "candidates"});
  for (const auto& [key, entry] : device.entries) {
    const CandidateResult* chosen = chosen_candidate(entry);
    std::vector<std::string> row = {key,
                                    entry.solver,
                                    config_text(entry.config),
                                    std::string(to_string(entry.layout)),
                                    chosen ? format_ms(chosen->median_ms) : "?",
                                    std::to_string(entry.candidates.size()),
                                    entry.provenance.date,
                                    entry.provenance.host};
    if (layer_of) row.push_back(layer_of(device.id, key));
    table.add_row(std::move(row));
  }
  if (table.empty()) {
    out << "  no entries\n";
    return;
  }
  table.print(out, "  ");
}

std::string entry_count(const DeviceRecord& device, const LayerOf& layer_of) {
  std::string text = std::to_string(device.entries.size());
  if (!layer_of) return text;
  int from_system = 0;
  for (const auto& [key, entry] : device.entries)
    from_system += layer_of(device.id, key) == "system";
  return text + " (" + std::to_string(device.entries.size() - from_system) + " user, " +
         std::to_string(from_system) + " system)";
}

void print_device(const DeviceRecord& device, bool is_this_machine, const LayerOf& layer_of,
                  std::ostream& out) {
  out << "device " << device.id << (is_this_machine ? "  (this machine)" : "") << "\n";
  out << "  fingerprint: " << fingerprint_summary(device.fingerprint) << "\n";
  out << "  thresholds: " << thresholds_summary(device.thresholds) << "\n";
  out << "  entries: " << entry_count(device, layer_of) << "\n";
  print_entries(device, layer_of, out);
}

void print_cache(const TuningCache& cache, const LayerOf& layer_of, const CommandLine& options,
                 std::ostream& out) {
  const std::string here = this_device().id;
  for (const auto& [id, device] : cache.devices()) {
    out << "\n";
    print_device(device, id == here, layer_of, out);
  }
  if (cache.devices().count(here) == 0)
    out << "\nno section for this machine (" << here << ") at --threads " << options.get("threads")
        << "\n";
}

}  // namespace

int run_show(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli("autotune show [F]",
                     "Prints a tuning cache (F, else --tune-cache, else the default file): each "
                     "device's fingerprint and thresholds, then its decisions. The device that "
                     "matches this machine at --threads is marked. Without F, the read-only system "
                     "cache under the user's ($TUNECNN_SYSTEM_TUNE_CACHE, else "
                     "share/tunecnn/tuning.yaml beside the programs' folder) is shown with it, as "
                     "`train` reads them: each entry's layer column says whether it comes from "
                     "the user's cache or the system's (the user's wins where both have a key).");
  cli.common_options();
  if (!cli.parse(args, out, 0, 1)) return 0;
  apply_threads(cli.options());
  if (!cli.positional().empty()) {
    const std::filesystem::path path = cli.positional()[0];
    const TuningCache cache = read_cache_file(path, err);
    out << path.string() << ": " << cache.devices().size() << " device(s)\n";
    print_cache(cache, LayerOf(), cli.options(), out);
    return 0;
  }
  const CacheLayers layers = read_cache_layers(tune_cache_path(cli.options()), err);
  if (!layers.has_user && !layers.has_system())
    read_cache_file(layers.user_path, err);  // throws its error for the missing file
  out << layers.user_path.string() << ": "
      << (layers.has_user ? std::to_string(layers.user.devices().size()) + " device(s)"
                          : std::string("no such file yet"))
      << "\n";
  if (!layers.has_system()) {
    print_cache(layers.user, LayerOf(), cli.options(), out);
    return 0;
  }
  out << "system cache " << layers.system_path.string()
      << " (read-only, under the user's): " << layers.system.devices().size() << " device(s)\n";
  const LayerOf layer_of = [&](const std::string& device_id, const std::string& key) {
    return std::string(layers.layer_of(device_id, key));
  };
  print_cache(layers.view(), layer_of, cli.options(), out);
  return 0;
}

}  // namespace tunecnn
