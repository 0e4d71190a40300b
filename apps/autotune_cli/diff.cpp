// autotune diff A B: what two caches would make a run do differently. Like diff(1): exit 0 when
// the decisions and thresholds are the same, 1 when they differ, 2 on trouble.
#include <ostream>
#include <sstream>

#include "apps/autotune_cli/cache_files.h"
#include "apps/autotune_cli/describe.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/autotune_cli/text_table.h"

namespace tunecnn {
namespace {

std::string choice_with_median(const TuningEntry& entry) {
  const CandidateResult* chosen = chosen_candidate(entry);
  return choice_summary(entry.solver, entry.config, entry.layout) + " (" +
         (chosen ? format_ms(chosen->median_ms) + " ms" : "median unknown") + ")";
}

bool same_choice(const TuningEntry& a, const TuningEntry& b) {
  return a.solver == b.solver && a.config == b.config && a.layout == b.layout;
}

// Transform bandwidths are measurements, re-taken by every tuned run, so only a pair measured on
// one side counts; the integer thresholds are decisions and count whenever they differ.
bool decided_differently(const DeviceThresholds& a, const DeviceThresholds& b) {
  if (a.mec_t != b.mec_t || a.ct != b.ct || a.nt != b.nt) return true;
  if (a.transform_gbps.size() != b.transform_gbps.size()) return true;
  for (const auto& [pair, gbps] : a.transform_gbps)
    if (b.transform_gbps.count(pair) == 0) return true;
  return false;
}

// Lines for one device both caches hold; returns how many differences it found.
int diff_device(const DeviceRecord& a, const DeviceRecord& b, std::ostream& out) {
  int differences = 0;
  for (const auto& [key, entry] : a.entries) {
    const auto other = b.entries.find(key);
    if (other == b.entries.end()) {
      out << "  only in A: " << key << ": " << choice_with_median(entry) << "\n";
      ++differences;
    } else if (!same_choice(entry, other->second)) {
      out << "  different: " << key << "\n    A: " << choice_with_median(entry)
          << "\n    B: " << choice_with_median(other->second) << "\n";
      ++differences;
    }
  }
  for (const auto& [key, entry] : b.entries)
    if (a.entries.count(key) == 0) {
      out << "  only in B: " << key << ": " << choice_with_median(entry) << "\n";
      ++differences;
    }
  if (decided_differently(a.thresholds, b.thresholds)) {
    out << "  thresholds differ:\n    A: " << thresholds_summary(a.thresholds)
        << "\n    B: " << thresholds_summary(b.thresholds) << "\n";
    ++differences;
  } else if (a.thresholds != b.thresholds) {
    out << "  note: transform bandwidths differ (measurements only; not counted)\n";
  }
  return differences;
}

std::size_t entry_count(const DeviceRecord& device) {
  return device.entries.size();
}

}  // namespace

int run_diff(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli("autotune diff A B",
                     "Compares two tuning caches per device and key: entries only in A or only in "
                     "B, keys whose choice (solver, config, layout) differs, with both medians, "
                     "and differing thresholds. Timings alone (candidate medians, transform "
                     "bandwidths) do not count as a difference. Exit "
                     "status: 0 the same, 1 different, 2 trouble (like diff(1)).");
  cli.common_options();
  if (!cli.parse(args, out, 2, 2)) return 0;
  const TuningCache a = read_cache_file(cli.positional()[0], err);
  const TuningCache b = read_cache_file(cli.positional()[1], err);
  int differences = 0;
  for (const auto& [id, device] : a.devices()) {
    const auto other = b.devices().find(id);
    if (other == b.devices().end()) {
      out << "device " << id << ": only in A (" << entry_count(device) << " entries)\n";
      ++differences;
      continue;
    }
    std::ostringstream lines;
    const int n = diff_device(device, other->second, lines);
    if (!lines.str().empty())  // differences, or notes that are not differences
      out << "device " << id << ": " << n << " difference(s)\n" << lines.str();
    differences += n;
  }
  for (const auto& [id, device] : b.devices())
    if (a.devices().count(id) == 0) {
      out << "device " << id << ": only in B (" << entry_count(device) << " entries)\n";
      ++differences;
    }
  out << (differences == 0 ? "the caches make the same decisions"
                           : std::to_string(differences) + " difference(s)")
      << "\n";
  return differences == 0 ? 0 : 1;
}

}  // namespace tunecnn
