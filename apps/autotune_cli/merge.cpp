// autotune merge A B -o C: one cache from two (e.g. from two machines or two runs), keeping the
// better-measured entry wherever both decided the same key for the same device.
#include <ostream>

#include "apps/autotune_cli/cache_files.h"
#include "apps/autotune_cli/describe.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"

namespace tunecnn {
namespace {

std::size_t entry_count(const TuningCache& cache) {
  std::size_t entries = 0;
  for (const auto& [id, device] : cache.devices()) entries += device.entries.size();
  return entries;
}

std::string counts(const TuningCache& cache) {
  return std::to_string(cache.devices().size()) + " device(s), " +
         std::to_string(entry_count(cache)) + " entries";
}

// Every key both caches decided differently for one device, and which side merge() kept.
void report_entry_conflicts(const TuningCache& a, const TuningCache& b, const TuningCache& merged,
                            std::ostream& out) {
  int a_won = 0, b_won = 0;
  std::string lines;
  for (const auto& [id, theirs] : b.devices())
    for (const auto& [key, b_entry] : theirs.entries) {
      const TuningEntry* a_entry = a.find(id, key);
      if (a_entry == nullptr || *a_entry == b_entry) continue;
      const bool kept_a = *merged.find(id, key) == *a_entry;
      ++(kept_a ? a_won : b_won);
      lines += "  " + id + " " + key + ": kept " + (kept_a ? "A" : "B") + " (" +
               std::to_string(total_runs(*a_entry)) + " runs, " + a_entry->provenance.date +
               " vs " + std::to_string(total_runs(b_entry)) + " runs, " + b_entry.provenance.date +
               ")\n";
    }
  out << "conflicts resolved: " << a_won + b_won << " (A won " << a_won << ", B won " << b_won
      << ")\n"
      << lines;
}

int differing_thresholds(const DeviceThresholds& a, const DeviceThresholds& b) {
  const auto differ = [](const std::optional<int>& x, const std::optional<int>& y) {
    return x && y && *x != *y;
  };
  int count = differ(a.mec_t, b.mec_t) + differ(a.ct, b.ct) + differ(a.nt, b.nt);
  for (const auto& [pair, gbps] : a.transform_gbps) {
    const auto other = b.transform_gbps.find(pair);
    count += other != b.transform_gbps.end() && other->second != gbps;
  }
  return count;
}

void report_threshold_conflicts(const TuningCache& a, const TuningCache& b, std::ostream& out) {
  for (const auto& [id, theirs] : b.devices()) {
    const auto mine = a.devices().find(id);
    if (mine == a.devices().end()) continue;
    if (const int n = differing_thresholds(mine->second.thresholds, theirs.thresholds); n > 0)
      out << "  " << id << ": " << n << " threshold(s) differ; kept A's ("
          << thresholds_summary(mine->second.thresholds) << ")\n";
  }
}

}  // namespace

int run_merge(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli("autotune merge A B -o C",
                     "Merges tuning caches A and B into C (which may be A or B; written "
                     "atomically). Where both hold a key for the same device, the better-measured "
                     "entry wins: more timed runs over all its candidates, then the newer date, "
                     "then A. Each threshold comes from A when A has it, else from B.");
  cli.option("output", "", "the merged cache to write (-o C)");
  cli.common_options();
  if (!cli.parse(args, out, 2, 2)) return 0;
  if (!cli.options().has("output")) throw UsageError("merge needs -o C, the file to write");
  const std::filesystem::path a_path = cli.positional()[0], b_path = cli.positional()[1];
  const std::filesystem::path c_path = cli.options().get("output");
  const TuningCache a = read_cache_file(a_path, err), b = read_cache_file(b_path, err);
  const TuningCache merged = merge(a, b);
  save_tuning_cache(merged, c_path);

  out << "A " << a_path.string() << ": " << counts(a) << "\n";
  out << "B " << b_path.string() << ": " << counts(b) << "\n";
  report_entry_conflicts(a, b, merged, out);
  report_threshold_conflicts(a, b, out);
  out << "wrote " << c_path.string() << ": " << counts(merged) << "\n";
  return 0;
}

}  // namespace tunecnn
