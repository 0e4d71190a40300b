// The tuned conv planner behind `train --tune`: cache hits time nothing (a fake clock counts
// calls), `full` re-tunes, `off` never times, keys are deduped, other devices' entries are not
// used, stale entries are re-tuned, and the file it writes round-trips. No real-time assertions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "autotune/tuned_planner.h"
#include "core/error.h"
#include "ops/conv/registry.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

const ConvProblem kSmall{Direction::fwd, 4, 3, 10, 9, 5, 3, 3, 1, 1, 1, 1, 1};
// 5x5: winograd_f2x3 does not apply.
const ConvProblem k5x5{Direction::fwd, 2, 4, 12, 12, 6, 5, 5, 1, 1, 2, 2, 1};
constexpr Direction kDirs[] = {Direction::fwd, Direction::bwd_data, Direction::bwd_weights};

// Moves 1 ms per call and counts the calls.
struct Harness {
  int calls = 0;
  double now = 0;
  std::vector<std::string> warnings;
  ConvTunerOptions options() {
    ConvTunerOptions o;
    o.warmup = 0;
    o.min_repeats = 2;
    o.max_repeats = 3;
    o.clock = [this] {
      ++calls;
      return now += 1e-3;
    };
    o.warn = [this](std::string_view w) { warnings.emplace_back(w); };
    return o;
  }
  std::shared_ptr<TunedConvPlanner> planner(TunePolicy policy, const std::filesystem::path& file,
                                            const std::string& device = "cpu-test") {
    return std::make_shared<TunedConvPlanner>(policy, file, options(), device,
                                              std::map<std::string, std::string>{{"model", device}});
  }
};

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
  EXPECT_NE(b->summary().find("3 conv problems, 3 from cache, 0 profiled"), std::string::npos)
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
    EXPECT_EQ(entry->solver, plan.for_direction(d).solver->name());
    EXPECT_EQ(entry->config, plan.for_direction(d).config);
    EXPECT_FALSE(entry->candidates.empty());
  }
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), loaded.cache.to_yaml());
  std::vector<std::string> warnings;
  EXPECT_EQ(parse_tuning_cache(text.str(), file.string(), warnings), loaded.cache);
}

TEST(TunedPlanner, PolicyParsingAndVerifyRejected) {
  EXPECT_EQ(parse_tune_policy("off"), TunePolicy::off);
  EXPECT_EQ(parse_tune_policy("cached"), TunePolicy::cached);
  EXPECT_EQ(parse_tune_policy("full"), TunePolicy::full);
  EXPECT_EQ(parse_tune_policy("verify"), TunePolicy::verify);
  EXPECT_THROW(parse_tune_policy("sometimes"), Error);
  testing::TempDir dir;
  Harness h;
  try {
    h.planner(TunePolicy::verify, dir.path() / "tuning.yaml");
    FAIL() << "verify was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("not implemented yet"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace tunecnn
