// Pruning a tuning cache: which device sections, entries and candidates go, and why.
#include "autotune/tuning_cache_prune.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>
#include <sstream>
#include <string_view>

#include "autotune/candidate_search.h"

namespace tunecnn {
namespace {

std::optional<std::vector<long>> version_numbers(const std::string& text) {
  std::vector<long> numbers;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, '.')) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 9)
      return std::nullopt;
    numbers.push_back(std::stol(part));
  }
  if (numbers.empty()) return std::nullopt;
  return numbers;
}

std::optional<std::time_t> utc_midnight(const std::string& date) {
  std::tm day{};
  char rest = 0;
  const int fields =
      std::sscanf(date.c_str(), "%4d-%2d-%2d%c", &day.tm_year, &day.tm_mon, &day.tm_mday, &rest);
  if (date.size() != 10 || fields != 3) return std::nullopt;
  day.tm_year -= 1900;
  day.tm_mon -= 1;
  return timegm(&day);
}

// GPU sections' ids start with "cuda-" (device_id(fields, "cuda")).
bool is_gpu_section(const std::string& device_id) {
  return device_id.rfind("cuda-", 0) == 0;
}

// Why the whole section goes, or "" when it stays.
std::string why_drop_device(const DeviceRecord& device, const PruneOptions& options) {
  const auto version = device.fingerprint.find("framework_version");
  if (version != device.fingerprint.end()) {
    const std::optional<int> order = compare_versions(version->second, options.current_version);
    if (order && *order < 0)
      return "written by tunecnn " + version->second + ", older than this " +
             options.current_version;
  }
  if (options.current_devices.count(device.id)) return "";
  if (device.last_used.empty())
    return options.drop_undated ? "no last-used date (--drop-undated)" : "";
  const std::optional<long> age = days_between(device.last_used, options.today);
  if (age && *age > options.older_than_days)
    return "last used " + device.last_used + ", " + std::to_string(*age) + " days ago";
  return "";
}

bool judges_solvers(const std::string& device_id, const PruneOptions& options) {
  return !is_gpu_section(device_id) || options.gpu_solvers_known;
}

DeviceRecord prune_device(const DeviceRecord& device, const PruneOptions& options,
                          PruneReport& report) {
  DeviceRecord kept = device;
  kept.entries.clear();
  for (const auto& [key, entry] : device.entries) {
    if (judges_solvers(device.id, options) && !options.known(entry.solver)) {
      report.dropped_entries.push_back(device.id + " " + key + ": its solver " + entry.solver +
                                       " no longer exists");
      continue;
    }
    TuningEntry pruned = entry;
    if (!options.keep_all_candidates) {
      // Where solvers cannot be judged, every one counts as known.
      const SolverFilter known = judges_solvers(device.id, options)
                                     ? options.known
                                     : SolverFilter([](std::string_view) { return true; });
      pruned.candidates = candidates_plans_read(entry, known);
      report.dropped_candidates += entry.candidates.size() - pruned.candidates.size();
    }
    kept.entries.emplace(key, std::move(pruned));
  }
  return kept;
}

}  // namespace

std::vector<CandidateResult> candidates_plans_read(const TuningEntry& entry,
                                                   const SolverFilter& known) {
  const std::vector<CandidateResult>& all = entry.candidates;
  const auto timed = [&](const CandidateResult& c) {
    return c.correct && c.runs > 0 && known(c.solver);
  };
  std::set<const CandidateResult*> keep;
  std::set<Layout> layouts;
  for (const CandidateResult& c : all) {
    if (c.solver == entry.solver && c.config == entry.config && c.layout == entry.layout)
      keep.insert(&c);
    if (timed(c)) layouts.insert(c.layout);
  }
  for (Layout layout : layouts) {
    const auto in_layout = [&](const CandidateResult& c) { return c.layout == layout && timed(c); };
    keep.insert(choose_candidate(all, in_layout));
    const CandidateResult* fastest = nullptr;  // the first of equals, as best_per_layout keeps
    for (const CandidateResult& c : all)
      if (in_layout(c) && (fastest == nullptr || c.median_ms < fastest->median_ms)) fastest = &c;
    keep.insert(fastest);
  }
  std::vector<CandidateResult> out;
  for (const CandidateResult& c : all)
    if (keep.count(&c)) out.push_back(c);
  return out;
}

PruneReport prune_tuning_cache(TuningCache& cache, const PruneOptions& options) {
  PruneReport report;
  TuningCache kept;
  for (const auto& [id, device] : cache.devices()) {
    if (const std::string why = why_drop_device(device, options); !why.empty()) {
      report.dropped_devices.push_back(id + ": " + why);
      continue;
    }
    kept.put_device(prune_device(device, options, report));
  }
  cache = std::move(kept);
  return report;
}

std::optional<int> compare_versions(const std::string& a, const std::string& b) {
  auto x = version_numbers(a), y = version_numbers(b);
  if (!x || !y) return std::nullopt;
  // "0.2" is "0.2.0".
  const std::size_t parts = std::max(x->size(), y->size());
  x->resize(parts, 0);
  y->resize(parts, 0);
  if (*x == *y) return 0;
  return *x < *y ? -1 : 1;
}

std::optional<long> days_between(const std::string& from, const std::string& to) {
  const auto start = utc_midnight(from), end = utc_midnight(to);
  if (!start || !end) return std::nullopt;
  return static_cast<long>((*end - *start) / 86400);
}

}  // namespace tunecnn
