// The read-only system cache under the user's (autotune/tuning_cache_layers.h): where it is, the
// layered view, and the planner over both layers. The target: a fresh machine given a
// system cache profiled on another machine of the same kind plans LeNet with zero profiling, and
// under --tune verify a machine of another fingerprint re-times at most 3 candidates per key.
// Writes go to the user's file only: the system file keeps its bytes and its mtime, and no lock
// file appears beside it. Fake clocks count every timing call; nothing here depends on real time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "autotune/tuning_cache_layers.h"
#include "core/rng.h"
#include "models/registry.h"
#include "support/scoped_env.h"
#include "support/test_data.h"
#include "support/tuner_harness.h"

namespace tunecnn {
namespace {
namespace fs = std::filesystem;
using Harness = testing::TunerHarness;
using testing::ScopedEnv;
using testing::TempDir;

const ConvProblem kSmall{Direction::fwd, 4, 3, 10, 9, 5, 3, 3, 1, 1, 1, 1, 1};
const ConvProblem k5x5{Direction::fwd, 2, 4, 12, 12, 6, 5, 5, 1, 1, 2, 2, 1};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A file's bytes and modification time, to show that nothing wrote it.
struct FileState {
  explicit FileState(const fs::path& path)
      : bytes(read_bytes(path)), mtime(fs::last_write_time(path)) {}
  bool operator==(const FileState&) const = default;
  std::string bytes;
  fs::file_time_type mtime;
};

// Nothing but the file itself in its folder: no lock file, nothing moved aside.
std::set<std::string> names_in(const fs::path& folder) {
  std::set<std::string> names;
  for (const auto& item : fs::directory_iterator(folder)) names.insert(item.path().filename());
  return names;
}

// What `autotune export` writes: one device section of a profiled machine's cache.
fs::path site_cache(const fs::path& profiled, const std::string& device, const fs::path& site) {
  TuningCache out;
  out.put_device(load_tuning_cache(profiled).cache.devices().at(device));
  save_tuning_cache(out, site);
  fs::remove(site.string() + ".lock");
  return site;
}

// `measured`, when given, is called with each key the pass profiles or re-times.
NetworkPlanReport plan_lenet(const std::shared_ptr<TunedPlanner>& tuner,
                             const std::function<void(const std::string&)>& measured = {}) {
  Rng rng(3);
  auto model = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng);
  NetworkPlanner planner(tuner);
  if (measured) planner.on_profile = [&](int, int, const std::string& key) { measured(key); };
  return planner.plan(*model, {4, 1, 28, 28});
}

// Machine A profiles LeNet under device "cpu-fleet"; its section becomes site/tuning.yaml.
struct Fleet {
  TempDir dir;
  fs::path site;
  NetworkPlanReport plan;
  Fleet() {
    fs::create_directories(dir.path() / "site");
    Harness a;
    const fs::path profiled = dir.path() / "machine-a.yaml";
    auto tuner = a.planner(TunePolicy::cached, profiled, "cpu-fleet");
    plan = plan_lenet(tuner);
    EXPECT_GT(tuner->stats().profiled, 0);
    tuner.reset();  // flushes
    site = site_cache(profiled, "cpu-fleet", dir.path() / "site" / "tuning.yaml");
  }
};

// ---- where the system cache is ----

TEST(TuningCacheLayers, SystemPathComesFromTheEnvironmentElseBesideTheProgram) {
  {
    ScopedEnv user("TUNECNN_TUNE_CACHE", "/tmp/user.yaml");
    ScopedEnv system("TUNECNN_SYSTEM_TUNE_CACHE", "/opt/site/tuning.yaml");
    EXPECT_EQ(default_system_tuning_cache_path(), fs::path("/opt/site/tuning.yaml"));
    EXPECT_EQ(default_tuning_cache_path(), fs::path("/tmp/user.yaml"));  // independent
  }
  {
    ScopedEnv none("TUNECNN_SYSTEM_TUNE_CACHE", "");
    EXPECT_EQ(default_system_tuning_cache_path(), fs::path());
  }
  ScopedEnv unset("TUNECNN_SYSTEM_TUNE_CACHE", nullptr);
  const fs::path program = fs::read_symlink("/proc/self/exe");
  EXPECT_EQ(default_system_tuning_cache_path(),
            program.parent_path().parent_path() / "share" / "tunecnn" / "tuning.yaml");
}

// ---- reading it ----

TEST(TuningCacheLayers, MissingSystemCacheIsEmptyAndSilent) {
  TempDir dir;
  const LoadedTuningCache loaded = load_system_tuning_cache(dir.path() / "absent.yaml");
  EXPECT_TRUE(loaded.cache.empty());
  EXPECT_TRUE(loaded.warnings.empty());
  EXPECT_TRUE(load_system_tuning_cache({}).warnings.empty());
  EXPECT_TRUE(names_in(dir.path()).empty());
}

TEST(TuningCacheLayers, UnusableSystemCacheIsOneWarningNamingItAndIsLeftAsItIs) {
  TempDir dir;
  const fs::path corrupt = dir.path() / "tuning.yaml";
  write_bytes(corrupt, "format: tunecnn-tuning-cache\nversion: 1\ndevices: [\n");
  const FileState before(corrupt);
  const LoadedTuningCache loaded = load_system_tuning_cache(corrupt);
  EXPECT_TRUE(loaded.cache.empty());
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_NE(loaded.warnings[0].find(corrupt.string()), std::string::npos) << loaded.warnings[0];
  EXPECT_NE(loaded.warnings[0].find("system tuning cache"), std::string::npos);
  EXPECT_TRUE(FileState(corrupt) == before);
  EXPECT_EQ(names_in(dir.path()), std::set<std::string>{"tuning.yaml"});  // not moved aside

  const fs::path folder = dir.path() / "a-folder";
  fs::create_directories(folder);
  EXPECT_EQ(load_system_tuning_cache(folder).warnings.size(), 1u);
}

// ---- the layered view ----

TEST(TuningCacheLayers, UsersEntriesAndThresholdsHideTheSystems) {
  const auto entry = [](const std::string& key, const std::string& solver, int runs) {
    TuningEntry e;
    e.key = key;
    e.solver = solver;
    e.candidates.push_back({solver, {}, Layout::NCHW, 1.0, 0.0, runs, 0, true});
    return e;
  };
  TuningCache user, system;
  // The system's entry is better measured; in a merge it would win, in the layers it does not.
  user.put("cpu-a", {{"model", "user's"}}, entry("k1", "mec", 1));
  system.put("cpu-a", {{"model", "system's"}}, entry("k1", "im2col_gemm", 100));
  system.put("cpu-a", {}, entry("k2", "direct", 1));
  system.put("cpu-b", {{"model", "b"}}, entry("k1", "direct", 1));
  DeviceThresholds mine, theirs;
  mine.ct = 16;
  theirs.ct = 64;
  theirs.nt = 128;
  user.set_thresholds("cpu-a", {}, mine);
  system.set_thresholds("cpu-a", {}, theirs);

  const TuningCache view = layered(user, system);
  EXPECT_EQ(view.find("cpu-a", "k1")->solver, "mec");
  EXPECT_EQ(view.find("cpu-a", "k2")->solver, "direct");
  EXPECT_EQ(view.find("cpu-b", "k1")->solver, "direct");
  EXPECT_EQ(view.devices().at("cpu-a").fingerprint.at("model"), "user's");
  EXPECT_EQ(view.thresholds("cpu-a").ct, 16);
  EXPECT_EQ(view.thresholds("cpu-a").nt, 128);
  EXPECT_EQ(merge(user, system).find("cpu-a", "k1")->solver, "im2col_gemm");
}

// What a layered view holds beyond the system layer, laid over it again, is the view.
TEST(TuningCacheLayers, AboveSystemKeepsWhatTheSystemDoesNotSupply) {
  const auto entry = [](const std::string& key, const std::string& solver) {
    TuningEntry e;
    e.key = key;
    e.solver = solver;
    e.candidates.push_back({solver, {}, Layout::NCHW, 1.0, 0.0, 3, 0, true});
    return e;
  };
  TuningCache user, system;
  system.put("cpu-a", {{"model", "a"}}, entry("shipped", "mec"));
  system.put("cpu-a", {{"model", "a"}}, entry("replaced", "mec"));
  system.put("cpu-s", {{"model", "s"}}, entry("only-system", "direct"));
  DeviceThresholds shipped;
  shipped.ct = 64;
  shipped.transform_gbps = {{"NCHW>CHWN", 5.0}, {"NCHW>NHWC", 6.0}};
  system.set_thresholds("cpu-a", {{"model", "a"}}, shipped);
  user.put("cpu-a", {{"model", "a"}}, entry("replaced", "im2col_gemm"));
  user.put("cpu-a", {{"model", "a"}}, entry("measured", "direct"));
  user.put("cpu-u", {{"model", "u"}}, entry("only-user", "mec"));
  DeviceThresholds own = shipped;
  own.nt = 128;
  own.transform_gbps["NCHW>NHWC"] = 7.0;
  user.set_thresholds("cpu-a", {{"model", "a"}}, own);

  const TuningCache view = layered(user, system);
  const TuningCache above = above_system(view, system);
  EXPECT_EQ(layered(above, system), view);
  EXPECT_EQ(above.devices().count("cpu-s"), 0u);
  EXPECT_EQ(above.find("cpu-a", "shipped"), nullptr);
  EXPECT_EQ(above.find("cpu-a", "replaced")->solver, "im2col_gemm");
  EXPECT_NE(above.find("cpu-a", "measured"), nullptr);
  EXPECT_NE(above.find("cpu-u", "only-user"), nullptr);
  const DeviceThresholds kept = above.thresholds("cpu-a");
  EXPECT_FALSE(kept.ct.has_value());
  EXPECT_EQ(kept.nt, 128);
  EXPECT_EQ(kept.transform_gbps, (std::map<std::string, double>{{"NCHW>NHWC", 7.0}}));
}

// ---- the planner over both layers: the target ----

TEST(TuningCacheLayers, FreshMachineOfTheSameKindPlansFromTheSystemCacheWithZeroProfiling) {
  Fleet fleet;
  const FileState site_before(fleet.site);
  Harness b;
  const fs::path fresh = fleet.dir.path() / "machine-b" / "tuning.yaml";
  auto tuner = b.planner(TunePolicy::cached, fresh, "cpu-fleet", fleet.site);
  const NetworkPlanReport plan = plan_lenet(tuner);
  const TunedPlannerStats stats = tuner->stats();
  EXPECT_EQ(stats.profiled, 0);
  EXPECT_EQ(stats.verified, 0);
  EXPECT_EQ(b.calls, 0);  // not a single timing, transform bandwidths included
  EXPECT_GT(stats.keys, 0);
  EXPECT_EQ(stats.from_cache, stats.keys);
  EXPECT_EQ(stats.from_system, stats.keys);
  EXPECT_NE(tuner->summary().find("from the system cache " + fleet.site.string()),
            std::string::npos)
      << tuner->summary();
  ASSERT_EQ(plan.layers.size(), fleet.plan.layers.size());
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    EXPECT_EQ(plan.layers[i].plan.layout(), fleet.plan.layers[i].plan.layout()) << i;
    for (Direction d : {Direction::fwd, Direction::bwd_weights})
      EXPECT_EQ(plan.layers[i].plan.for_direction(d).solver,
                fleet.plan.layers[i].plan.for_direction(d).solver)
          << i;
  }
  tuner.reset();
  EXPECT_TRUE(FileState(fleet.site) == site_before);
  EXPECT_EQ(names_in(fleet.site.parent_path()), std::set<std::string>{"tuning.yaml"});
  EXPECT_TRUE(b.warnings.empty());
}

TEST(TuningCacheLayers, VerifyOnAnotherFingerprintRetimesAtMostThreeCandidatesPerKey) {
  Fleet fleet;
  const FileState site_before(fleet.site);
  Harness c;
  const fs::path user = fleet.dir.path() / "machine-c.yaml";
  auto tuner = c.planner(TunePolicy::verify, user, "cpu-other", fleet.site);
  std::map<std::string, int> retimes;  // how often each key was measured
  plan_lenet(tuner, [&](const std::string& key) { ++retimes[key]; });
  const TunedPlannerStats stats = tuner->stats();
  tuner.reset();
  EXPECT_EQ(stats.profiled, 0);
  EXPECT_GT(stats.verified, 0);
  EXPECT_LE(stats.retimed_candidates, 3 * stats.verified);

  const TuningCache written = load_tuning_cache(user).cache;
  EXPECT_EQ(written.devices().count("cpu-fleet"), 0u);  // the system's section is not copied
  const DeviceRecord& mine = written.devices().at("cpu-other");
  EXPECT_EQ(mine.entries.size(), static_cast<std::size_t>(stats.verified));
  const TuningCache system = load_system_tuning_cache(fleet.site).cache;
  for (const auto& [key, entry] : mine.entries) {
    EXPECT_EQ(retimes[key], 1) << key;
    EXPECT_LE(entry.candidates.size(), 3u) << key;
    const TuningEntry* original = system.find("cpu-fleet", key);
    ASSERT_NE(original, nullptr) << key;
    EXPECT_LE(entry.candidates.size(), original->candidates.size()) << key;
  }
  EXPECT_TRUE(FileState(fleet.site) == site_before);
  EXPECT_EQ(names_in(fleet.site.parent_path()), std::set<std::string>{"tuning.yaml"});
}

TEST(TuningCacheLayers, WhatIsMeasuredGoesToTheUsersFileOnly) {
  Fleet fleet;
  const FileState site_before(fleet.site);
  Harness h;
  const fs::path user = fleet.dir.path() / "user.yaml";
  auto tuner = h.planner(TunePolicy::cached, user, "cpu-fleet", fleet.site);
  tuner->plan(k5x5);  // a layer the site never profiled
  EXPECT_EQ(tuner->stats().profiled, 3);
  tuner.reset();
  const TuningCache written = load_tuning_cache(user).cache;
  const DeviceRecord& section = written.devices().at("cpu-fleet");
  EXPECT_EQ(section.entries.size(), 3u);  // its own three keys, none of the site's
  for (const auto& [key, entry] : section.entries)
    EXPECT_NE(key.find("kh5 kw5"), std::string::npos) << key;
  EXPECT_TRUE(FileState(fleet.site) == site_before);
  EXPECT_EQ(names_in(fleet.site.parent_path()), std::set<std::string>{"tuning.yaml"});
}

TEST(TuningCacheLayers, UsersEntryIsUsedOverTheSystemsForTheSameKey) {
  Fleet fleet;
  Harness first;
  first.jitter = 0.01, first.seed = 7;  // timings of its own, unlike the site's
  const fs::path user = fleet.dir.path() / "user.yaml";
  // The user's own measurement of a key the site has too.
  auto full = first.planner(TunePolicy::full, user, "cpu-fleet");
  plan_lenet(full);
  full.reset();
  Harness again;
  auto tuner = again.planner(TunePolicy::cached, user, "cpu-fleet", fleet.site);
  plan_lenet(tuner);
  EXPECT_EQ(again.calls, 0);
  EXPECT_GT(tuner->stats().from_cache, 0);
  EXPECT_EQ(tuner->stats().from_system, 0);
}

TEST(TuningCacheLayers, CorruptSystemCacheIsReportedAndTheRunProceeds) {
  TempDir dir;
  const fs::path site = dir.path() / "site.yaml";
  write_bytes(site, "devices: {this is: [not a tuning cache\n");
  const FileState before(site);
  Harness h;
  auto tuner = h.planner(TunePolicy::cached, dir.path() / "user.yaml", "cpu-test", site);
  tuner->plan(kSmall);
  EXPECT_EQ(tuner->stats().profiled, 3);
  tuner.reset();
  ASSERT_EQ(h.warnings.size(), 1u);
  EXPECT_NE(h.warnings[0].find(site.string()), std::string::npos) << h.warnings[0];
  EXPECT_TRUE(FileState(site) == before);
  EXPECT_EQ(
      load_tuning_cache(dir.path() / "user.yaml").cache.devices().at("cpu-test").entries.size(),
      3u);
  EXPECT_EQ(names_in(dir.path()),
            (std::set<std::string>{"site.yaml", "user.yaml", "user.yaml.lock"}));
}

}  // namespace
}  // namespace tunecnn
