// autotune show [F]: every device section of a cache, its thresholds and decisions.
#include <ostream>

#include "apps/autotune_cli/cache_files.h"
#include "apps/autotune_cli/describe.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/autotune_cli/text_table.h"

namespace tunecnn {
namespace {

void print_entries(const DeviceRecord& device, std::ostream& out) {
  TextTable table({"key", "solver", "config", "layout", "median ms", "candidates", "date", "host"},
                  {"median ms", "candidates"});
  for (const auto& [key, entry] : device.entries) {
    const CandidateResult* chosen = chosen_candidate(entry);
    table.add_row(
        {key, entry.solver, config_text(entry.config), std::string(to_string(entry.layout)),
         chosen ? format_ms(chosen->median_ms) : "?", std::to_string(entry.candidates.size()),
         entry.provenance.date, entry.provenance.host});
  }
  if (table.empty()) {
    out << "  no entries\n";
    return;
  }
  table.print(out, "  ");
}

void print_device(const DeviceRecord& device, bool is_this_machine, std::ostream& out) {
  out << "device " << device.id << (is_this_machine ? "  (this machine)" : "") << "\n";
  out << "  fingerprint: " << fingerprint_summary(device.fingerprint) << "\n";
  out << "  thresholds: " << thresholds_summary(device.thresholds) << "\n";
  out << "  entries: " << device.entries.size() << "\n";
  print_entries(device, out);
}

}  // namespace

int run_show(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli("autotune show [F]",
                     "Prints a tuning cache (F, else --tune-cache, else the default file): each "
                     "device's fingerprint and thresholds, then its decisions. The device that "
                     "matches this machine at --threads is marked.");
  cli.common_options();
  if (!cli.parse(args, out, 0, 1)) return 0;
  apply_threads(cli.options());
  const std::filesystem::path path = cli.positional().empty()
                                         ? tune_cache_path(cli.options())
                                         : std::filesystem::path(cli.positional()[0]);
  const TuningCache cache = read_cache_file(path, err);
  const std::string here = this_device().id;
  out << path.string() << ": " << cache.devices().size() << " device(s)\n";
  for (const auto& [id, device] : cache.devices()) {
    out << "\n";
    print_device(device, id == here, out);
  }
  if (cache.devices().count(here) == 0)
    out << "\nno section for this machine (" << here << ") at --threads "
        << cli.options().get("threads") << "\n";
  return 0;
}

}  // namespace tunecnn
