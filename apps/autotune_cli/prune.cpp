// autotune prune [F]: shrinks a tuning cache to what current plans read
// (autotune/tuning_cache_prune.h) and says what it removed. The file is rewritten in one locked,
// atomic update, so a tuner writing meanwhile loses nothing and an error leaves the old file whole.
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "apps/autotune_cli/cache_files.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/autotune_cli/text_table.h"
#include "autotune/tuning_cache_prune.h"
#include "core/cuda_runtime.h"

namespace tunecnn {
namespace {

SubcommandLine prune_command_line() {
  SubcommandLine cli(
      "autotune prune [F]",
      "Shrinks a tuning cache (F, else --tune-cache, else the default file). Drops device "
      "sections written by an older tunecnn and sections no run has used for --older-than days "
      "(this machine's CPU section at --threads and its GPU's are kept; sections from before "
      "tunecnn dated them are kept unless --drop-undated), entries whose chosen solver this "
      "build no longer has, and, with --keep-candidates best, every candidate that no plan "
      "reads: each entry keeps its choice and, per layout, its best and fastest candidates, "
      "which is what --tune cached and --tune verify use. Runs restricted by --force-solver or "
      "a smaller --max-workspace may re-tune pruned keys. Prints what it removed and the size "
      "before and after.");
  cli.option("older-than", "90", "drop device sections last used more than DAYS days ago");
  cli.flag("drop-undated", "also drop device sections that have no last-used date");
  cli.option("keep-candidates", "best",
             "best: keep only the candidates plans read; all: keep every candidate");
  cli.flag("dry-run", "print what would be removed and the size it would have; write nothing");
  cli.common_options();
  return cli;
}

PruneOptions prune_options(const CommandLine& options) {
  PruneOptions prune;
  try {
    prune.older_than_days = options.get_int("older-than");
  } catch (const Error& e) {
    throw UsageError(e.message());
  }
  if (prune.older_than_days < 0) throw UsageError("--older-than must be 0 or more days");
  const std::string keep = options.get("keep-candidates");
  if (keep != "best" && keep != "all")
    throw UsageError("--keep-candidates must be best or all, not '" + keep + "'");
  prune.keep_all_candidates = keep == "all";
  prune.drop_undated = options.has("drop-undated");
  prune.today = utc_date_today();
  prune.current_version = TUNECNN_VERSION;
  prune.gpu_solvers_known = cuda_built();
  prune.current_devices.insert(this_device(Device::cpu).id);
  if (cuda_device_count() > 0) prune.current_devices.insert(this_device(Device::cuda).id);
  return prune;
}

void print_report(const PruneReport& report, bool dry_run, std::ostream& out) {
  const std::string verb = dry_run ? "would remove" : "removed";
  for (const std::string& device : report.dropped_devices)
    out << verb << " device " << device << "\n";
  for (const std::string& entry : report.dropped_entries) out << verb << " entry " << entry << "\n";
  out << verb << " " << report.dropped_devices.size() << " device section(s), "
      << report.dropped_entries.size() << " entries, " << report.dropped_candidates
      << " candidates no plan reads\n";
}

std::string size_change(std::uintmax_t before, std::uintmax_t after) {
  std::ostringstream text;
  text << format_bytes(before) << " -> " << format_bytes(after);
  if (after > 0) text << " (" << format_speedup(static_cast<double>(before) / after) << " smaller)";
  return text.str();
}

}  // namespace

int run_prune(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli = prune_command_line();
  if (!cli.parse(args, out, 0, 1)) return 0;
  apply_threads(cli.options());
  const PruneOptions options = prune_options(cli.options());
  const bool dry_run = cli.options().has("dry-run");
  const std::filesystem::path path = cli.positional().empty()
                                         ? tune_cache_path(cli.options())
                                         : std::filesystem::path(cli.positional()[0]);
  // Read first as the other tools do: a missing or unusable file is an error naming it, and is
  // left alone (the update below would set an unusable file aside and start empty).
  TuningCache cache = read_cache_file(path, err);
  const std::uintmax_t before = std::filesystem::file_size(path);
  PruneReport report;
  std::uintmax_t after = 0;
  if (dry_run) {
    report = prune_tuning_cache(cache, options);
    after = cache.to_yaml().size();
  } else {
    // Pruned under the lock from the file as it is then, so entries another process added since
    // the read above are judged too, not lost.
    const LoadedTuningCache written = update_tuning_cache_file(
        path, [&](TuningCache& fresh) { report = prune_tuning_cache(fresh, options); });
    for (const std::string& warning : written.warnings) err << "warning: " << warning << "\n";
    after = std::filesystem::file_size(path);
  }
  print_report(report, dry_run, out);
  out << path.string() << ": " << size_change(before, after)
      << (dry_run ? " (dry run: nothing written)" : "") << "\n";
  return 0;
}

}  // namespace tunecnn
