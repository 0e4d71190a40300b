// Tuning-cache housekeeping (issue 31): the last-used date of each device section, `autotune
// stats`, and `autotune prune`, whose target is a cache of 5 device sections holding every
// candidate shrunk at least 5x with this device's plans unchanged.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "apps/autotune_cli/options.h"
#include "autotune/candidate_search.h"
#include "autotune/network_planner.h"
#include "autotune/tuning_cache_prune.h"
#include "core/rng.h"
#include "core/threading.h"
#include "models/registry.h"
#include "tests/support/autotune_runs.h"
#include "tests/support/test_data.h"
#include "tests/support/tuner_harness.h"

namespace tunecnn {
namespace {
namespace fs = std::filesystem;

using Outcome = testing::AutotuneOutcome;

Outcome autotune(const std::vector<std::string>& args) {
  return testing::run_autotune_captured(args);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// An atomic save replaces the file, so a new inode means it was written.
ino_t inode(const fs::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_ino;
}

TuningCache parse(const std::string& text, std::vector<std::string>& warnings) {
  return parse_tuning_cache(text, "test.yaml", warnings);
}

// A date `days` before today, as last_used spells it.
std::string days_ago(int days) {
  const std::time_t then = std::time(nullptr) - static_cast<std::time_t>(days) * 86400;
  std::tm utc{};
  gmtime_r(&then, &utc);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &utc);
  return text;
}

CandidateResult candidate(const std::string& solver, Layout layout, double median_ms,
                          std::size_t workspace = 0, bool correct = true) {
  CandidateResult c;
  c.solver = solver;
  c.layout = layout;
  c.median_ms = median_ms;
  c.spread_ms = 0.01;
  c.runs = 5;
  c.workspace_bytes = workspace;
  c.correct = correct;
  return c;
}

TuningEntry entry_of(const std::string& key, std::vector<CandidateResult> candidates) {
  TuningEntry e;
  e.key = key;
  e.solver = candidates.front().solver;
  e.layout = candidates.front().layout;
  e.candidates = std::move(candidates);
  e.provenance = {"testhost", "2026-01-02T03:04:05Z", TUNECNN_VERSION};
  return e;
}

DeviceRecord device_of(const std::string& id, const std::string& version, const std::string& date,
                       std::map<std::string, TuningEntry> entries) {
  DeviceRecord d;
  d.id = id;
  d.fingerprint = {{"model", id}, {"framework_version", version}};
  d.last_used = date;
  d.entries = std::move(entries);
  return d;
}

// ---- the last-used date ----

TEST(TuningCacheLastUsed, RoundTripsAndMergeKeepsTheLaterDate) {
  TuningCache a, b;
  a.put_device(device_of("cpu-a", "0.1.0", "2026-03-01", {}));
  b.put_device(device_of("cpu-a", "0.1.0", "2026-05-01", {}));
  std::vector<std::string> warnings;
  EXPECT_EQ(parse(a.to_yaml(), warnings), a);
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(contains(a.to_yaml(), "last_used: 2026-03-01\n")) << a.to_yaml();
  EXPECT_EQ(merge(a, b).devices().at("cpu-a").last_used, "2026-05-01");
  EXPECT_EQ(merge(b, a).devices().at("cpu-a").last_used, "2026-05-01");

  EXPECT_TRUE(a.mark_used("cpu-a", "2026-04-01"));
  EXPECT_FALSE(a.mark_used("cpu-a", "2026-04-01"));  // the same day: nothing to write
  EXPECT_FALSE(a.mark_used("cpu-a", "2026-01-01"));  // never backwards
  EXPECT_FALSE(a.mark_used("cpu-absent", "2026-04-01"));
  EXPECT_EQ(a.devices().at("cpu-a").last_used, "2026-04-01");
}

TEST(TuningCacheLastUsed, OldCachesWithoutItLoadAsUnknownAndABadDateIsOnlyWarnedAbout) {
  const std::string old_cache =
      "format: tunecnn-tuning-cache\nversion: 1\ndevices:\n"
      "  - id: cpu-old\n    fingerprint:\n      model: Old CPU\n    thresholds: {}\n"
      "    entries: []\n# end of tunecnn-tuning-cache\n";
  std::vector<std::string> warnings;
  const TuningCache old = parse(old_cache, warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(old.devices().count("cpu-old"), 1u);
  EXPECT_EQ(old.devices().at("cpu-old").last_used, "");
  EXPECT_FALSE(contains(old.to_yaml(), "last_used"));

  std::string bad = old_cache;
  bad.replace(bad.find("    thresholds"), 0, "    last_used: yesterday\n");
  const TuningCache with_bad_date = parse(bad, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "last_used")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "yesterday")) << warnings[0];
  EXPECT_EQ(with_bad_date.devices().at("cpu-old").last_used, "");
}

// A cached run dates its section on the first use of the day and leaves the file alone on the
// next one; a run that only reads another device's section does not date it.
TEST(TuningCacheLastUsed, ACachedRunDatesItsSectionOncePerDay) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "tuning.yaml";
  const ConvProblem problem{Direction::fwd, 2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1};
  testing::TunerHarness tuning;
  tuning.planner(TunePolicy::cached, file)->plan(problem);
  // Age the section, as if it was tuned long ago by a build that did not date sections.
  TuningCache cache = load_tuning_cache(file).cache;
  DeviceRecord undated = cache.devices().at("cpu-test");
  undated.last_used.clear();
  cache.put_device(undated);
  save_tuning_cache(cache, file);

  testing::TunerHarness first, second;
  first.planner(TunePolicy::cached, file)->plan(problem);
  EXPECT_EQ(first.calls, 0);  // only looked up
  EXPECT_EQ(load_tuning_cache(file).cache.devices().at("cpu-test").last_used, utc_date_today());
  const ino_t dated = inode(file);
  second.planner(TunePolicy::cached, file)->plan(problem);
  EXPECT_EQ(inode(file), dated);  // already dated today: not rewritten

  testing::TunerHarness other;
  other.planner(TunePolicy::off, file, "cpu-elsewhere")->plan(problem);
  EXPECT_EQ(inode(file), dated);
}

// ---- the pruning rules ----

TEST(TuningCachePrune, VersionsAndDays) {
  EXPECT_EQ(compare_versions("0.1.0", "0.1.0"), 0);
  EXPECT_LT(*compare_versions("0.0.9", "0.1.0"), 0);
  EXPECT_LT(*compare_versions("0.9.0", "0.10.0"), 0);  // numbers, not text
  EXPECT_GT(*compare_versions("1.0", "0.99.99"), 0);
  EXPECT_EQ(compare_versions("0.2", "0.2.0"), 0);
  EXPECT_EQ(compare_versions("dev", "0.1.0"), std::nullopt);
  EXPECT_EQ(days_between("2026-02-27", "2026-03-01"), 2);
  EXPECT_EQ(days_between("2025-11-27", "2026-11-27"), 365);
  EXPECT_EQ(days_between("soon", "2026-03-01"), std::nullopt);
}

// Per layout: the planner's pick (here the deterministic, workspace-free one within the noise)
// and the fastest (what verify re-times); the chosen candidate; nothing incorrect, untimed or of
// a solver this build lacks.
TEST(TuningCachePrune, KeepsWhatPlansReadInTheirOrder) {
  CandidateResult fastest = candidate("im2col_gemm", Layout::NCHW, 1.00, 4096);
  CandidateResult tied_lean = candidate("direct", Layout::NCHW, 1.005, 0);
  CandidateResult slower = candidate("mec", Layout::NCHW, 2.0);
  CandidateResult wrong = candidate("winograd_f2x3", Layout::NCHW, 0.5, 0, false);
  CandidateResult gone = candidate("retired_solver", Layout::NCHW, 0.1);
  CandidateResult untimed = candidate("mec", Layout::NHWC, 0.2);
  untimed.runs = 0;
  CandidateResult nhwc = candidate("im2col_gemm", Layout::NHWC, 3.0);
  CandidateResult nhwc_slow = candidate("direct", Layout::NHWC, 9.0);
  TuningEntry e =
      entry_of("k", {slower, fastest, wrong, gone, tied_lean, untimed, nhwc_slow, nhwc});
  const std::vector<CandidateResult> kept = candidates_plans_read(e, is_known_solver);
  EXPECT_EQ(kept, (std::vector<CandidateResult>{slower, fastest, tied_lean, nhwc}));
  // The planner's own choice, over what is kept, is what it was over everything.
  const auto eligible = [](const CandidateResult& c) { return is_known_solver(c.solver); };
  EXPECT_EQ(*choose_candidate(kept, eligible), *choose_candidate(e.candidates, eligible));
}

TEST(TuningCachePrune, DropsOldVersionsStaleSectionsAndGoneSolversOnly) {
  const auto entries = [](const std::string& solver) {
    return std::map<std::string, TuningEntry>{
        {"k", entry_of("k", {candidate(solver, Layout::NCHW, 1.0)})}};
  };
  TuningCache cache;
  cache.put_device(device_of("cpu-here", TUNECNN_VERSION, days_ago(400), entries("direct")));
  cache.put_device(device_of("cpu-recent", TUNECNN_VERSION, days_ago(3), entries("direct")));
  cache.put_device(device_of("cpu-stale", TUNECNN_VERSION, days_ago(91), entries("direct")));
  cache.put_device(device_of("cpu-undated", TUNECNN_VERSION, "", entries("direct")));
  cache.put_device(device_of("cpu-old", "0.0.1", days_ago(1), entries("direct")));
  cache.put_device(device_of("cpu-newer", "99.0.0", days_ago(1), entries("direct")));
  cache.put_device(device_of("cpu-gone", TUNECNN_VERSION, days_ago(1), entries("retired")));
  cache.put_device(device_of("cuda-gpu", TUNECNN_VERSION, days_ago(1), entries("cudnn")));
  PruneOptions options;
  options.today = utc_date_today();
  options.current_version = TUNECNN_VERSION;
  options.current_devices = {"cpu-here"};
  TuningCache pruned = cache;
  const PruneReport report = prune_tuning_cache(pruned, options);

  std::set<std::string> ids;
  for (const auto& [id, device] : pruned.devices()) ids.insert(id);
  EXPECT_EQ(ids, (std::set<std::string>{"cpu-here", "cpu-recent", "cpu-undated", "cpu-newer",
                                        "cpu-gone", "cuda-gpu"}));
  ASSERT_EQ(report.dropped_devices.size(), 2u);
  EXPECT_TRUE(contains(report.dropped_devices[0], "cpu-old: written by tunecnn 0.0.1"));
  EXPECT_TRUE(contains(report.dropped_devices[1], "cpu-stale: last used"));
  EXPECT_TRUE(pruned.devices().at("cpu-gone").entries.empty());
  ASSERT_EQ(report.dropped_entries.size(), 1u);
  EXPECT_TRUE(contains(report.dropped_entries[0], "retired no longer exists"));
  // Without CUDA this build cannot judge a GPU solver: the GPU section keeps its entry.
  EXPECT_EQ(pruned.devices().at("cuda-gpu").entries.size(), 1u);

  options.drop_undated = true;
  options.older_than_days = 2;
  pruned = cache;
  prune_tuning_cache(pruned, options);
  EXPECT_EQ(pruned.devices().count("cpu-undated"), 0u);
  EXPECT_EQ(pruned.devices().count("cpu-recent"), 0u);
  EXPECT_EQ(pruned.devices().count("cpu-here"), 1u);  // this machine's, whatever its age
}

// ---- the target ----

const std::string kNet = "lenet";
const Shape kExample{1, 28, 28};
const Shape kBatch{4, 1, 28, 28};

// Plans kNet's training step over `cache` alone (no file, so planning writes nothing), with a
// clock that reads exactly 1 ms per call: the same cache gives the same plan and costs.
struct PlanOutcome {
  NetworkPlanReport report;
  TunedPlannerStats stats;
};

PlanOutcome plan_network(const TuningCache& cache, TunePolicy policy, const std::string& device) {
  testing::TunerHarness h;
  auto tuner = std::make_shared<TunedPlanner>(
      policy, cache, h.options(), device, std::map<std::string, std::string>{{"model", device}});
  Rng rng(3);
  auto model = build_model(kNet, ModelOptions{kExample, 10, {}, {}}, rng);
  PlanOutcome outcome{NetworkPlanner(tuner).plan(*model, kBatch), {}};
  outcome.stats = tuner->stats();
  return outcome;
}

void expect_same_plans(const NetworkPlanReport& a, const NetworkPlanReport& b) {
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    EXPECT_EQ(a.layers[i].plan.layout(), b.layers[i].plan.layout()) << "conv " << i;
    for (Direction d : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
      EXPECT_EQ(a.layers[i].plan.for_direction(d).solver, b.layers[i].plan.for_direction(d).solver)
          << "conv " << i;
      EXPECT_EQ(a.layers[i].plan.for_direction(d).config, b.layers[i].plan.for_direction(d).config)
          << "conv " << i;
    }
  }
  ASSERT_EQ(a.pools.size(), b.pools.size());
  for (std::size_t i = 0; i < a.pools.size(); ++i) {
    EXPECT_EQ(a.pools[i].plan.layout, b.pools[i].plan.layout) << "pool " << i;
    EXPECT_EQ(a.pools[i].plan.fwd.solver, b.pools[i].plan.fwd.solver) << "pool " << i;
    EXPECT_EQ(a.pools[i].plan.fwd.config, b.pools[i].plan.fwd.config) << "pool " << i;
    EXPECT_EQ(a.pools[i].plan.bwd_data.solver, b.pools[i].plan.bwd_data.solver) << "pool " << i;
    EXPECT_EQ(a.pools[i].plan.bwd_data.config, b.pools[i].plan.bwd_data.config) << "pool " << i;
  }
  EXPECT_EQ(a.softmax_solver, b.softmax_solver);
  // The layout DP's objective is made of the kept candidates' medians.
  EXPECT_DOUBLE_EQ(a.total_ms, b.total_ms);
}

// The cache the issue describes, grown over upgrades and machines and never pruned: this
// machine's section, its sections from two older tunecnn versions (the version is part of a
// section's id, so each upgrade started a new one) and two lab machines no longer used; every
// candidate of every key kept. LeNet is profiled here (with noisy fake timings, so the candidates'
// medians, ties and winners vary) and its entries copied to the other sections. Candidates alone
// shrink a LeNet section about 2x (~8 candidates a key, up to two kept per layout under noise), so
// with a second section still in use the whole file shrinks about 4.9x rather than 5x.
TEST(AutotunePrune, FiveSectionsWithEveryCandidateShrinkFiveFoldAndPlansStayTheSame) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "tuning.yaml";
  testing::TunerHarness profiling;
  profiling.jitter = 0.3;
  profiling.seed = 11;
  {
    auto tuner = profiling.planner(TunePolicy::cached, file, "cpu-test");
    Rng rng(3);
    auto model = build_model(kNet, ModelOptions{kExample, 10, {}, {}}, rng);
    NetworkPlanner(tuner).plan(*model, kBatch);
  }
  TuningCache cache = load_tuning_cache(file).cache;
  const DeviceRecord here = cache.devices().at("cpu-test");
  EXPECT_EQ(here.last_used, utc_date_today());
  const auto copy = [&](const std::string& id, const std::string& version,
                        const std::string& date) {
    DeviceRecord other = device_of(id, version, date, here.entries);
    other.thresholds = here.thresholds;
    cache.put_device(other);
  };
  copy("cpu-test-0.0.1", "0.0.1", days_ago(400));
  copy("cpu-test-0.0.2", "0.0.2", days_ago(120));
  copy("cpu-lab-1", TUNECNN_VERSION, days_ago(180));
  copy("cpu-lab-2", TUNECNN_VERSION, days_ago(100));
  save_tuning_cache(cache, file);
  ASSERT_EQ(cache.devices().size(), 5u);

  const PlanOutcome cached_before = plan_network(cache, TunePolicy::cached, "cpu-test");
  const PlanOutcome verify_before = plan_network(cache, TunePolicy::verify, "cpu-new");
  const std::uintmax_t before = fs::file_size(file);

  const Outcome prune = autotune({"prune", "--tune-cache", file.string()});
  ASSERT_EQ(prune.status, 0) << prune.err;
  EXPECT_TRUE(contains(prune.out, "removed device cpu-test-0.0.1: written by tunecnn 0.0.1"))
      << prune.out;
  EXPECT_TRUE(contains(prune.out, "removed device cpu-test-0.0.2: written by tunecnn 0.0.2"))
      << prune.out;
  EXPECT_TRUE(contains(prune.out, "removed device cpu-lab-1: last used")) << prune.out;
  EXPECT_TRUE(contains(prune.out, "removed device cpu-lab-2: last used")) << prune.out;
  const std::uintmax_t after = fs::file_size(file);
  const double ratio = static_cast<double>(before) / static_cast<double>(after);
  std::cout << "pruned " << before << " -> " << after << " bytes: " << ratio << "x smaller\n";
  RecordProperty("shrink_ratio", std::to_string(ratio));
  EXPECT_GE(ratio, 5.0) << prune.out;

  std::vector<std::string> warnings;
  const TuningCache pruned = parse_tuning_cache(read_text(file), file.string(), warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(pruned.devices().size(), 1u);
  const DeviceRecord& pruned_here = pruned.devices().at("cpu-test");
  EXPECT_EQ(pruned_here.entries.size(), here.entries.size());
  const auto candidates = [](const DeviceRecord& device) {
    std::size_t n = 0;
    for (const auto& [key, entry] : device.entries) n += entry.candidates.size();
    return n;
  };
  std::cout << "this machine's section: " << candidates(here) << " -> " << candidates(pruned_here)
            << " candidates\n";
  EXPECT_LT(candidates(pruned_here), candidates(here));

  const PlanOutcome cached_after = plan_network(pruned, TunePolicy::cached, "cpu-test");
  EXPECT_EQ(cached_after.stats.profiled, 0);
  EXPECT_EQ(cached_after.stats.from_cache, cached_before.stats.from_cache);
  expect_same_plans(cached_before.report, cached_after.report);
  // verify, on a device the cache has never seen, re-times the same shortlists.
  const PlanOutcome verify_after = plan_network(pruned, TunePolicy::verify, "cpu-new");
  EXPECT_EQ(verify_after.stats.verified, verify_before.stats.verified);
  EXPECT_EQ(verify_after.stats.retimed_candidates, verify_before.stats.retimed_candidates);
  expect_same_plans(verify_before.report, verify_after.report);
}

// ---- the command line ----

class AutotuneHousekeeping : public ::testing::Test {
 protected:
  void SetUp() override {
    set_num_threads(0);  // the subcommands' default --threads
    here_ = this_device().id;
    TuningCache cache;
    const TuningEntry entry =
        entry_of("k", {candidate("direct", Layout::NCHW, 1.0), candidate("mec", Layout::NCHW, 2.0),
                       candidate("im2col_gemm", Layout::NCHW, 3.0)});
    cache.put_device(device_of(here_, TUNECNN_VERSION, utc_date_today(), {{"k", entry}}));
    cache.put_device(device_of("cpu-old", "0.0.1", "", {{"k", entry}}));
    save_tuning_cache(cache, file_);
  }
  testing::TempDir dir_;
  fs::path file_ = dir_.path() / "tuning.yaml";
  std::string here_;
};

TEST_F(AutotuneHousekeeping, StatsPrintsSizeAndOneRowPerSection) {
  const Outcome stats = autotune({"stats", "--tune-cache", file_.string()});
  ASSERT_EQ(stats.status, 0) << stats.err;
  EXPECT_TRUE(contains(stats.out, file_.string() + ": ")) << stats.out;
  EXPECT_TRUE(contains(stats.out, ", 2 device section(s)\n")) << stats.out;
  std::istringstream lines(stats.out);
  std::string line, here_row, old_row;
  while (std::getline(lines, line)) {
    if (contains(line, here_ + " *")) here_row = line;
    if (contains(line, "cpu-old ")) old_row = line;
  }
  std::istringstream here(here_row), old(old_row);
  std::string id, star, entries, candidates, version, date;
  here >> id >> star >> entries >> candidates >> version >> date;
  EXPECT_EQ(entries + " " + candidates + " " + version + " " + date,
            "1 3 " + std::string(TUNECNN_VERSION) + " " + utc_date_today())
      << stats.out;
  old >> id >> entries >> candidates >> version >> date;
  EXPECT_EQ(entries + " " + candidates + " " + version + " " + date, "1 3 0.0.1 unknown")
      << stats.out;
  EXPECT_TRUE(contains(stats.out, "* this machine")) << stats.out;
}

TEST_F(AutotuneHousekeeping, DryRunReportsButWritesNothing) {
  const std::string bytes = read_text(file_);
  const ino_t before = inode(file_);
  const Outcome dry = autotune({"prune", "--dry-run", file_.string()});
  ASSERT_EQ(dry.status, 0) << dry.err;
  EXPECT_TRUE(contains(dry.out, "would remove device cpu-old: written by tunecnn 0.0.1"))
      << dry.out;
  EXPECT_TRUE(contains(dry.out, "would remove 1 device section(s), 0 entries, 2 candidates"))
      << dry.out;
  EXPECT_TRUE(contains(dry.out, "(dry run: nothing written)")) << dry.out;
  EXPECT_EQ(read_text(file_), bytes);
  EXPECT_EQ(inode(file_), before);

  const Outcome keep_all = autotune({"prune", "--keep-candidates", "all", file_.string()});
  ASSERT_EQ(keep_all.status, 0) << keep_all.err;
  EXPECT_TRUE(contains(keep_all.out, "removed 1 device section(s), 0 entries, 0 candidates"))
      << keep_all.out;
  EXPECT_EQ(load_tuning_cache(file_).cache.find(here_, "k")->candidates.size(), 3u);
}

TEST_F(AutotuneHousekeeping, BadInputIsAClearErrorAndTheFileIsLeftAlone) {
  const std::string bytes = read_text(file_);
  const auto expect_usage = [](const std::vector<std::string>& args, const std::string& says) {
    const Outcome run = autotune(args);
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_TRUE(contains(run.err, says)) << run.err;
  };
  expect_usage({"prune", "--older-than", "soon", file_.string()}, "--older-than");
  expect_usage({"prune", "--older-than", "-1", file_.string()}, "--older-than must be 0 or more");
  expect_usage({"prune", "--keep-candidates", "some", file_.string()},
               "--keep-candidates must be best or all, not 'some'");
  expect_usage({"prune", "--bogus"}, "unknown option --bogus");
  expect_usage({"stats", "a.yaml", "b.yaml"}, "usage: autotune stats");
  EXPECT_EQ(read_text(file_), bytes);

  for (const std::string sub : {"prune", "stats"}) {
    const fs::path missing = dir_.path() / "missing.yaml";
    const Outcome none = autotune({sub, missing.string()});
    EXPECT_EQ(none.status, 1) << sub;
    EXPECT_TRUE(contains(none.err, "no tuning cache at " + missing.string())) << none.err;
    EXPECT_FALSE(fs::exists(missing));

    const fs::path corrupt = dir_.path() / "corrupt.yaml";
    std::ofstream(corrupt) << "format: tunecnn-tuning-cache\nversion: 1\ndevices: [\n";
    const std::string corrupt_bytes = read_text(corrupt);
    const Outcome bad = autotune({sub, corrupt.string()});
    EXPECT_EQ(bad.status, 1) << sub;
    EXPECT_TRUE(contains(bad.err, corrupt.string())) << bad.err;
    EXPECT_EQ(read_text(corrupt), corrupt_bytes);
  }
}

TEST_F(AutotuneHousekeeping, HelpDescribesEveryOption) {
  const Outcome help = autotune({"prune", "--help"});
  EXPECT_EQ(help.status, 0);
  for (const std::string option :
       {"--older-than", "--drop-undated", "--keep-candidates", "--dry-run", "--tune-cache"})
    EXPECT_TRUE(contains(help.out, option)) << help.out;
  const Outcome overview = autotune({"--help"});
  EXPECT_TRUE(contains(overview.out, "  stats")) << overview.out;
  EXPECT_TRUE(contains(overview.out, "  prune")) << overview.out;
}

}  // namespace
}  // namespace tunecnn
