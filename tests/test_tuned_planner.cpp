// The tuned conv planner behind `train --tune`: cache hits time nothing (a fake clock counts
// calls), `full` re-tunes, `off` never times and follows the thresholds, keys are deduped, other
// devices' entries are not used except by `verify` (which re-times at most one candidate per
// layout), --force-solver is honoured, stale entries are re-tuned, the file it writes
// round-trips, and a planner over a cache handed over in memory (data-parallel ranks) plans the
// same and writes no file. No real-time assertions.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autotune/calibration.h"
#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "core/error.h"
#include "core/init.h"
#include "core/rng.h"
#include "models/registry.h"
#include "ops/conv/registry.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/test_data.h"
#include "tests/support/tuner_harness.h"

namespace tunecnn {
namespace {

const ConvProblem kSmall{Direction::fwd, 4, 3, 10, 9, 5, 3, 3, 1, 1, 1, 1, 1};
// 5x5: winograd_f2x3 does not apply.
const ConvProblem k5x5{Direction::fwd, 2, 4, 12, 12, 6, 5, 5, 1, 1, 2, 2, 1};
constexpr Direction kDirs[] = {Direction::fwd, Direction::bwd_data, Direction::bwd_weights};

using Harness = testing::TunerHarness;

bool same(const ConvLayerPlan& a, const ConvLayerPlan& b) {
  for (Direction d : kDirs)
    if (a.for_direction(d).solver != b.for_direction(d).solver ||
        !(a.for_direction(d).config == b.for_direction(d).config))
      return false;
  return true;
}

TEST(TunedPlanner, CacheHitTimesNothing) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness first;
  auto a = first.planner(TunePolicy::cached, file);
  const ConvLayerPlan tuned = a->plan(kSmall);
  EXPECT_GT(first.calls, 0);
  EXPECT_EQ(a->stats().profiled, 3);
  EXPECT_EQ(a->stats().from_cache, 0);
  ASSERT_TRUE(std::filesystem::exists(file));

  Harness second;
  auto b = second.planner(TunePolicy::cached, file);
  const ConvLayerPlan cached = b->plan(kSmall);
  EXPECT_EQ(second.calls, 0);
  EXPECT_EQ(b->stats().keys, 3);
  EXPECT_EQ(b->stats().from_cache, 3);
  EXPECT_EQ(b->stats().profiled, 0);
  EXPECT_TRUE(same(tuned, cached));
  EXPECT_NE(b->summary().find("3 problems, 3 from cache, 0 profiled"), std::string::npos)
      << b->summary();
}

TEST(TunedPlanner, FullRetunesEvenWhenCached) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness first;
  first.planner(TunePolicy::cached, file)->plan(kSmall);
  Harness again;
  auto full = again.planner(TunePolicy::full, file);
  full->plan(kSmall);
  EXPECT_GT(again.calls, 0);
  EXPECT_EQ(full->stats().profiled, 3);
  EXPECT_EQ(full->stats().from_cache, 0);
  EXPECT_EQ(load_tuning_cache(file).cache.devices().at("cpu-test").entries.size(), 3u);
}

TEST(TunedPlanner, OffNeverTimes) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness empty;
  auto off = empty.planner(TunePolicy::off, file);
  const ConvLayerPlan plan = off->plan(kSmall);
  EXPECT_EQ(empty.calls, 0);
  EXPECT_EQ(off->stats().defaults, 3);
  EXPECT_EQ(off->stats().profiled, 0);
  EXPECT_TRUE(same(plan, FirstApplicablePlanner().plan(kSmall)));
  EXPECT_FALSE(std::filesystem::exists(file));  // nothing tuned, nothing written

  Harness tune;
  const ConvLayerPlan tuned = tune.planner(TunePolicy::cached, file)->plan(kSmall);
  Harness cached;
  auto off2 = cached.planner(TunePolicy::off, file);
  EXPECT_TRUE(same(off2->plan(kSmall), tuned));  // off still uses what the cache holds
  EXPECT_EQ(cached.calls, 0);
  EXPECT_EQ(off2->stats().from_cache, 3);
}

TEST(TunedPlanner, KeysAreTunedOncePerPlanner) {
  testing::TempDir dir;
  Harness h;
  auto p = h.planner(TunePolicy::full, dir.path() / "tuning.yaml");
  const ConvLayerPlan first = p->plan(kSmall);
  const int calls = h.calls;
  const ConvLayerPlan second = p->plan(kSmall);  // e.g. a second layer of the same shape
  EXPECT_EQ(h.calls, calls);
  EXPECT_TRUE(same(first, second));
  EXPECT_EQ(p->stats().keys, 3);
  EXPECT_EQ(p->stats().profiled, 3);
}

TEST(TunedPlanner, OtherDevicesEntriesAreNotUsed) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness other;
  other.planner(TunePolicy::cached, file, "cpu-other")->plan(kSmall);
  Harness here;
  auto p = here.planner(TunePolicy::cached, file, "cpu-here");
  p->plan(kSmall);
  EXPECT_GT(here.calls, 0);
  EXPECT_EQ(p->stats().profiled, 3);
  EXPECT_EQ(p->stats().from_cache, 0);
  const TuningCache cache = load_tuning_cache(file).cache;  // both devices kept
  EXPECT_EQ(cache.devices().at("cpu-other").entries.size(), 3u);
  EXPECT_EQ(cache.devices().at("cpu-here").entries.size(), 3u);
}

TEST(TunedPlanner, EntryWhoseSolverNoLongerAppliesIsRetunedWithWarning) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  const ConvProblem fwd = k5x5.with_dir(Direction::fwd);
  TuningEntry stale;
  stale.key = fwd.key();
  stale.solver = "winograd_f2x3";  // 3x3 only
  update_tuning_cache_file(file, [&](TuningCache& c) { c.put("cpu-test", {{"model", "x"}}, stale); });
  Harness h;
  auto p = h.planner(TunePolicy::cached, file);
  const ConvLayerPlan plan = p->plan(k5x5);
  EXPECT_NE(plan.fwd.solver->name(), "winograd_f2x3");
  EXPECT_EQ(p->stats().profiled, 3);
  ASSERT_FALSE(h.warnings.empty());
  EXPECT_NE(h.warnings.front().find("re-tuning"), std::string::npos) << h.warnings.front();
  EXPECT_NE(load_tuning_cache(file).cache.find("cpu-test", stale.key)->solver, "winograd_f2x3");
}

// An entry for `problem` whose one candidate, correct and timed, is im2col_gemm with chunk=-7:
// a config im2col_gemm never offers.
TuningEntry entry_with_unoffered_config(const ConvProblem& problem) {
  CandidateResult edited;
  edited.solver = "im2col_gemm";
  edited.config = TuneConfig{{{"chunk", -7}}};
  edited.runs = 3;
  edited.median_ms = 0.001;
  TuningEntry entry;
  entry.key = problem.key();
  entry.solver = edited.solver;
  entry.config = edited.config;
  entry.candidates = {edited};
  return entry;
}

// A cached candidate whose config its solver never offers (an edited file, another version) is
// named in a warning and not run: here the entry's only candidate, so the key is tuned again.
TEST(TunedPlanner, CachedConfigTheSolverDoesNotOfferIsIgnoredWithWarning) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  const ConvProblem fwd = k5x5.with_dir(Direction::fwd);
  const TuningEntry entry = entry_with_unoffered_config(fwd);
  update_tuning_cache_file(file, [&](TuningCache& c) { c.put("cpu-test", {{"model", "x"}}, entry); });
  Harness h;
  auto p = h.planner(TunePolicy::cached, file);
  const ConvLayerPlan plan = p->plan(k5x5);
  EXPECT_NE(plan.fwd.config.get("chunk", 0), -7);
  EXPECT_EQ(p->stats().profiled, 3);
  ASSERT_FALSE(h.warnings.empty());
  const std::string& warning = h.warnings.front();
  for (const std::string& part : {file.string(), fwd.key(), std::string("im2col_gemm [chunk=-7]"),
                                  std::string("not a config that solver offers")})
    EXPECT_NE(warning.find(part), std::string::npos) << part << " in: " << warning;
}

// Under verify, another device's candidate whose config its solver does not offer is not run:
// nothing carried over runs, so the key is tuned in full, with the tuner's warning.
TEST(TunedPlanner, VerifyDoesNotRunAForeignConfigTheSolverDoesNotOffer) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  const ConvProblem fwd = k5x5.with_dir(Direction::fwd);
  const TuningEntry entry = entry_with_unoffered_config(fwd);
  update_tuning_cache_file(file, [&](TuningCache& c) {
    c.put("cpu-other", {{"model", "cpu-other"}}, entry);
  });
  Harness h;
  auto p = h.planner(TunePolicy::verify, file, "cpu-here");
  const ConvLayerPlan plan = p->plan(k5x5);
  EXPECT_NE(plan.fwd.config.get("chunk", 0), -7);
  const TuningCache after = load_tuning_cache(file).cache;
  const TuningEntry* mine = after.find("cpu-here", fwd.key());
  ASSERT_NE(mine, nullptr);
  for (const CandidateResult& c : mine->candidates)
    EXPECT_NE(c.config.get("chunk", 0), -7) << c.solver;
  const bool warned = std::any_of(h.warnings.begin(), h.warnings.end(), [](const std::string& w) {
    return w.find("none of the 1 candidates carried over") != std::string::npos;
  });
  EXPECT_TRUE(warned);
}

TEST(TunedPlanner, WrittenCacheRoundTrips) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness h;
  auto p = h.planner(TunePolicy::cached, file);
  const ConvLayerPlan plan = p->plan(kSmall);
  const LoadedTuningCache loaded = load_tuning_cache(file);
  EXPECT_TRUE(loaded.warnings.empty());
  for (Direction d : kDirs) {
    const TuningEntry* entry = loaded.cache.find("cpu-test", kSmall.with_dir(d).key());
    ASSERT_NE(entry, nullptr);
    // The layer runs each direction's best candidate in the layer's layout.
    const ConvPlan& chosen = plan.for_direction(d);
    EXPECT_EQ(chosen.layout, plan.layout());
    const bool measured = std::any_of(entry->candidates.begin(), entry->candidates.end(), [&](const auto& c) {
      return c.solver == chosen.solver->name() && c.config == chosen.config && c.layout == chosen.layout;
    });
    EXPECT_TRUE(measured) << chosen.solver->name();
  }
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), loaded.cache.to_yaml());
  std::vector<std::string> warnings;
  EXPECT_EQ(parse_tuning_cache(text.str(), file.string(), warnings), loaded.cache);
}

TEST(TunedPlanner, PolicyParsing) {
  EXPECT_EQ(parse_tune_policy("off"), TunePolicy::off);
  EXPECT_EQ(parse_tune_policy("cached"), TunePolicy::cached);
  EXPECT_EQ(parse_tune_policy("full"), TunePolicy::full);
  EXPECT_EQ(parse_tune_policy("verify"), TunePolicy::verify);
  EXPECT_THROW(parse_tune_policy("sometimes"), Error);
}

TEST(TunedPlanner, VerifyRetimesAtMostOneCandidatePerLayoutFromAnotherDevice) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness other;
  other.planner(TunePolicy::cached, file, "cpu-other")->plan(kSmall);
  const TuningCache before = load_tuning_cache(file).cache;
  Harness here;
  auto p = here.planner(TunePolicy::verify, file, "cpu-here");
  const ConvLayerPlan plan = p->plan(kSmall);
  EXPECT_GT(here.calls, 0);
  EXPECT_EQ(p->stats().verified, 3);
  EXPECT_EQ(p->stats().profiled, 0);
  EXPECT_LE(p->stats().retimed_candidates, 3 * 3);
  const TuningCache after = load_tuning_cache(file).cache;
  for (Direction d : kDirs) {
    const std::string key = kSmall.with_dir(d).key();
    const TuningEntry* mine = after.find("cpu-here", key);
    ASSERT_NE(mine, nullptr) << key;
    EXPECT_LE(mine->candidates.size(), 3u);
    EXPECT_LT(mine->candidates.size(), before.find("cpu-other", key)->candidates.size());
    EXPECT_EQ(plan.for_direction(d).layout, plan.layout());
  }
  // A second verify run finds this device's entries and times nothing.
  Harness again;
  auto q = again.planner(TunePolicy::verify, file, "cpu-here");
  q->plan(kSmall);
  EXPECT_EQ(again.calls, 0);
  EXPECT_EQ(q->stats().from_cache, 3);
}

// Keys do not name the device: a GPU section's entries (here the CPU's own, moved under a
// "cuda-" id) are no shortlist for a CPU run, which must search in full.
TEST(TunedPlanner, VerifyIgnoresEntriesOfTheOtherKindOfDevice) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness other;
  other.planner(TunePolicy::cached, file, "cpu-other")->plan(kSmall);
  TuningCache gpu_only;
  // Held in a variable: a range-for keeps only the last temporary of its range alive (until C++23).
  const LoadedTuningCache profiled = load_tuning_cache(file);
  for (const auto& [key, entry] : profiled.cache.devices().at("cpu-other").entries)
    gpu_only.put("cuda-other", {{"name", "Test GPU"}}, entry);
  save_tuning_cache(gpu_only, file);
  Harness here;
  auto p = here.planner(TunePolicy::verify, file, "cpu-here");
  p->plan(kSmall);
  EXPECT_EQ(p->stats().verified, 0);
  EXPECT_EQ(p->stats().profiled, 3);
}

TEST(TunedPlanner, VerifyWithoutAnyOtherDeviceTunesInFull) {
  testing::TempDir dir;
  Harness h;
  auto p = h.planner(TunePolicy::verify, dir.path() / "tuning.yaml");
  p->plan(kSmall);
  EXPECT_EQ(p->stats().profiled, 3);
  EXPECT_EQ(p->stats().verified, 0);
}

TEST(TunedPlanner, ForcedSolverIsUsedEvenWhenTheCacheChoseAnother) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness first;
  first.planner(TunePolicy::cached, file)->plan(k5x5);
  for (const char* forced : {"mec", "direct_chwn", "im2col_gemm"}) {
    Harness h;
    TunerOptions o = h.options();
    o.only_solvers = {forced};
    TunedPlanner p(TunePolicy::cached, file, o, "cpu-test", {{"model", "cpu-test"}});
    const ConvLayerPlan plan = p.plan(k5x5);
    for (Direction d : kDirs) EXPECT_EQ(plan.for_direction(d).solver->name(), forced) << forced;
  }
  // A forced run that had to tune writes nothing: the cache keeps only unforced decisions.
  testing::TempDir other_dir;
  const auto forced_file = other_dir.path() / "tuning.yaml";
  Harness forced_run;
  TunerOptions forced_options = forced_run.options();
  forced_options.only_solvers = {"mec"};
  TunedPlanner(TunePolicy::cached, forced_file, forced_options, "cpu-test", {{"model", "x"}}).plan(k5x5);
  // (The transform bandwidths it measured are device facts and may be stored.)
  EXPECT_EQ(load_tuning_cache(forced_file).cache.find("cpu-test", k5x5.key()), nullptr);
  // A forced solver that cannot run the problem (MEC needs groups 1) leaves the others in play.
  ConvProblem grouped = k5x5;
  grouped.g = 2;
  Harness h;
  TunerOptions o = h.options();
  o.only_solvers = {"mec"};
  TunedPlanner p(TunePolicy::cached, file, o, "cpu-test", {{"model", "cpu-test"}});
  EXPECT_NE(p.plan(grouped).fwd.solver->name(), "mec");
}

TEST(TunedPlanner, OffFollowsTheDeviceThresholds) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  DeviceThresholds t;
  t.ct = 8;  // C < 8: CHWN
  t.nt = 1024;
  t.mec_t = 16;
  update_tuning_cache_file(file, [&](TuningCache& c) { c.set_thresholds("cpu-test", {{"model", "x"}}, t); });
  Harness h;
  auto off = h.planner(TunePolicy::off, file);
  const ConvLayerPlan plan = off->plan(kSmall);  // 3 input channels
  EXPECT_EQ(h.calls, 0);
  EXPECT_EQ(off->stats().defaults, 3);
  EXPECT_EQ(plan.layout(), Layout::CHWN);
  EXPECT_EQ(plan.fwd.solver->name(), threshold_plan(kSmall, t, SIZE_MAX).fwd.solver->name());
  EXPECT_NE(off->summary().find("decided by the device thresholds"), std::string::npos) << off->summary();
}

// Changes the working directory for a scope, so a test can see a file written to a relative path.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const std::filesystem::path& dir)
      : previous_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~WorkingDirectory() { std::filesystem::current_path(previous_); }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;

 private:
  std::filesystem::path previous_;
};

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string contents(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The data-parallel ranks plan from the cache rank 0 tuned, handed over in memory: the same plans,
// nothing timed under `off`, and no file read or written, whatever the policy.
TEST(TunedPlanner, InMemoryCacheFromAnotherPlannerGivesItsPlansWithoutFiles) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness root;
  auto tuner = root.planner(TunePolicy::cached, file);
  const ConvLayerPlan tuned = tuner->plan(kSmall);
  ASSERT_GT(root.calls, 0);
  const std::string file_before = contents(file);
  const auto files_before = files_in(dir.path());

  testing::TempDir cwd;  // where a planner that wrongly wrote to an empty path would leave files
  WorkingDirectory in_cwd(cwd.path());
  Harness rank;
  TunedPlanner off(TunePolicy::off, tuner->cache(), rank.options(), "cpu-test",
                   {{"model", "cpu-test"}});
  EXPECT_TRUE(same(off.plan(kSmall), tuned));
  EXPECT_EQ(rank.calls, 0);
  EXPECT_EQ(off.stats().from_cache, 3);
  EXPECT_EQ(off.stats().defaults, 0);
  EXPECT_TRUE(off.cache_path().empty());
  EXPECT_NE(off.summary().find("(in memory)"), std::string::npos) << off.summary();
  EXPECT_TRUE(rank.warnings.empty());

  // A key the cache lacks is profiled under `cached`, kept in the planner's cache and written
  // nowhere.
  Harness tuning_rank;
  TunedPlanner cached(TunePolicy::cached, tuner->cache(), tuning_rank.options(), "cpu-test",
                      {{"model", "cpu-test"}});
  cached.plan(k5x5);
  EXPECT_GT(tuning_rank.calls, 0);
  EXPECT_EQ(cached.stats().profiled, 3);
  EXPECT_NE(cached.cache().find("cpu-test", k5x5.key()), nullptr);
  // The handed-over entries stay beside the new one.
  EXPECT_NE(cached.cache().find("cpu-test", kSmall.key()), nullptr);
  EXPECT_TRUE(tuning_rank.warnings.empty()) << tuning_rank.warnings.front();
  EXPECT_TRUE(files_in(cwd.path()).empty());
  EXPECT_EQ(files_in(dir.path()), files_before);
  EXPECT_EQ(contents(file), file_before);
}

// The data needs no gradient, so LeNet's conv1 never runs backward to its input: the pass neither
// profiles nor stores conv1's bwd_data key (conv2's it does), and a training step with the plans
// installed still gives every parameter a gradient.
TEST(TunedPlanner, TheFirstLayersInputGradientIsNeitherTunedNorStored) {
  testing::TempDir dir;
  Harness h;
  auto tuner = h.planner(TunePolicy::full, dir.path() / "tuning.yaml");
  Rng rng(3);
  auto model = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng);
  NetworkPlanner planner(tuner);
  std::vector<std::string> profiled;
  planner.on_profile = [&](int, int, const std::string& key) { profiled.push_back(key); };
  const NetworkPlanReport report = planner.plan(*model, {4, 1, 28, 28});
  ASSERT_EQ(report.layers.size(), 2u);
  const auto stored = [&](const ConvProblem& fwd, Direction dir) {
    const std::string key = fwd.with_dir(dir).key();
    const bool in_cache = tuner->cache().find("cpu-test", key) != nullptr;
    EXPECT_EQ(in_cache, std::count(profiled.begin(), profiled.end(), key) == 1) << key;
    return in_cache;
  };
  EXPECT_TRUE(stored(report.layers[0].problem, Direction::fwd));
  EXPECT_FALSE(stored(report.layers[0].problem, Direction::bwd_data));
  EXPECT_TRUE(stored(report.layers[0].problem, Direction::bwd_weights));
  EXPECT_TRUE(stored(report.layers[1].problem, Direction::bwd_data));

  Tensor images = Tensor::empty({4, 1, 28, 28});
  uniform_fill(images, -1, 1, rng);
  softmax_cross_entropy(model->forward(Variable(images)), {0, 1, 2, 3}).backward();
  for (const auto& [name, p] : model->parameters()) EXPECT_TRUE(p.grad().defined()) << name;
}

// Stable decisions: two profiling passes from empty caches whose timings differ only by noise
// (every candidate 1 ms, +-1% per call, a different noise sequence per pass) pick the same plan
// for the whole network: every conv and pooling layer's layout, solvers and configs, and the
// loss's solver. The ties go by fixed rules (workspace, then enumeration order; the layout DP's
// transforms, then layout order), never by which measurement happened to be lower.
TEST(TunedPlanner, TwoPassesWhoseTimingsDifferByNoiseOnlyPickTheSamePlan) {
  const auto plan_with_noise = [](std::uint64_t seed) {
    testing::TempDir dir;
    Harness h;
    h.jitter = 0.01, h.seed = seed;
    auto tuner = h.planner(TunePolicy::cached, dir.path() / "tuning.yaml");
    Rng rng(3);
    auto model = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng);
    const NetworkPlanReport report = NetworkPlanner(tuner).plan(*model, {4, 1, 28, 28});
    EXPECT_GT(tuner->stats().profiled, 0);
    return report;
  };
  const NetworkPlanReport a = plan_with_noise(1), b = plan_with_noise(2);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    EXPECT_EQ(a.layers[i].plan.layout(), b.layers[i].plan.layout()) << "conv " << i;
    EXPECT_TRUE(same(a.layers[i].plan, b.layers[i].plan)) << "conv " << i;
  }
  ASSERT_EQ(a.pools.size(), b.pools.size());
  for (std::size_t i = 0; i < a.pools.size(); ++i) {
    const PoolLayerPlan &pa = a.pools[i].plan, &pb = b.pools[i].plan;
    EXPECT_EQ(pa.layout, pb.layout) << "pool " << i;
    EXPECT_EQ(pa.fwd.solver, pb.fwd.solver) << "pool " << i;
    EXPECT_EQ(pa.fwd.config, pb.fwd.config) << "pool " << i;
    EXPECT_EQ(pa.bwd_data.solver, pb.bwd_data.solver) << "pool " << i;
    EXPECT_EQ(pa.bwd_data.config, pb.bwd_data.config) << "pool " << i;
  }
  EXPECT_EQ(a.softmax_solver, b.softmax_solver);
}

}  // namespace
}  // namespace tunecnn
