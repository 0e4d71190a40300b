// autotune stats [F]: how big a tuning cache is and what each device section holds, for deciding
// what `autotune prune` should drop.
#include <filesystem>
#include <ostream>

#include "apps/autotune_cli/cache_files.h"
#include "apps/autotune_cli/describe.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/autotune_cli/text_table.h"

namespace tunecnn {
namespace {

std::size_t candidate_count(const DeviceRecord& device) {
  std::size_t candidates = 0;
  for (const auto& [key, entry] : device.entries) candidates += entry.candidates.size();
  return candidates;
}

std::string fingerprint_field(const DeviceRecord& device, const std::string& name) {
  const auto it = device.fingerprint.find(name);
  return it == device.fingerprint.end() ? "?" : it->second;
}

}  // namespace

int run_stats(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli("autotune stats [F]",
                     "Prints a tuning cache's size (F, else --tune-cache, else the default file) "
                     "and one row per device section: its id, entries, candidates, the tunecnn "
                     "version that wrote it, the day a run last used it ('unknown' for sections "
                     "written before tunecnn dated them), and its fingerprint.");
  cli.common_options();
  if (!cli.parse(args, out, 0, 1)) return 0;
  apply_threads(cli.options());
  const std::filesystem::path path = cli.positional().empty()
                                         ? tune_cache_path(cli.options())
                                         : std::filesystem::path(cli.positional()[0]);
  const TuningCache cache = read_cache_file(path, err);
  out << path.string() << ": " << format_bytes(std::filesystem::file_size(path)) << ", "
      << cache.devices().size() << " device section(s)\n";
  if (cache.empty()) return 0;
  const std::string here = this_device().id;
  TextTable table({"device", "entries", "candidates", "tunecnn", "last used", "fingerprint"},
                  {"entries", "candidates"});
  for (const auto& [id, device] : cache.devices())
    table.add_row({id + (id == here ? " *" : ""), std::to_string(device.entries.size()),
                   std::to_string(candidate_count(device)),
                   fingerprint_field(device, "framework_version"),
                   device.last_used.empty() ? "unknown" : device.last_used,
                   fingerprint_summary(device.fingerprint)});
  table.print(out, "  ");
  if (cache.devices().count(here))
    out << "* this machine at --threads " << cli.options().get("threads") << "\n";
  return 0;
}

}  // namespace tunecnn
