// The YAML tuning cache: round trips, deterministic output, bad files set aside untouched,
// malformed entries skipped, merge, the default location, and two processes writing at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "autotune/fingerprint.h"
#include "autotune/tuning_cache.h"
#include "core/cuda_runtime.h"
#include "support/scoped_env.h"
#include "support/test_data.h"

namespace tunecnn {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

const std::map<std::string, std::string> kFingerprint = {
    {"model", "Test CPU @ 3.0GHz"}, {"isa", "avx2 fma"}, {"threads_used", "4"}};

TuningEntry make_entry(const std::string& key, int runs = 10,
                       const std::string& date = "2024-05-01T12:00:00Z") {
  TuningEntry e;
  e.key = key;
  e.solver = "mec";
  e.config = TuneConfig{{{"T", 100}, {"chunk", 4}}};
  e.layout = Layout::NCHW;
  e.candidates.push_back({"mec", e.config, Layout::NCHW, 1.25, 0.0625, runs, 4096, true});
  e.candidates.push_back({"im2col_gemm", {}, Layout::NHWC, 0.1, 1e-3, runs, 123456789, false});
  e.candidates.push_back({"direct", {}, Layout::CHWN, 3.0000000000000004, 0, 0, 0, true});
  // cuDNN's bwd_filter ALGO_0 adds with atomics: not deterministic.
  e.candidates.push_back({"cudnn", TuneConfig{{{"algo", 0}}}, Layout::NCHW, 0.9, 0.01, runs, 64, true, false});
  e.provenance = {"host-a", date, "0.1.0"};
  return e;
}

TuningCache sample_cache() {
  TuningCache cache;
  cache.put("cpu-0000000000000001", kFingerprint, make_entry("conv fwd n8 c3 h32"));
  cache.put("cpu-0000000000000001", kFingerprint, make_entry("conv bwd_data n8 c3 h32", 5));
  DeviceThresholds t;
  t.mec_t = 8;
  t.nt = 128;
  cache.set_thresholds("cpu-0000000000000001", kFingerprint, t);
  cache.put("cpu-00000000000000ff", {{"model", "other"}}, make_entry("k"));
  return cache;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Files beside `path` whose names start with its name + `infix`.
std::vector<fs::path> siblings(const fs::path& path, const std::string& infix) {
  std::vector<fs::path> found;
  const std::string prefix = path.filename().string() + infix;
  for (const auto& item : fs::directory_iterator(path.parent_path()))
    if (item.path().filename().string().rfind(prefix, 0) == 0) found.push_back(item.path());
  return found;
}

bool mentions(const std::vector<std::string>& warnings, const std::string& text) {
  for (const std::string& w : warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

TEST(Fingerprint, FieldsAndStableId) {
  const CpuFingerprint fp = cpu_fingerprint();
  const auto fields = fp.fields();
  for (const char* name : {"model", "isa", "hardware_threads", "threads_used", "l2_bytes",
                           "l3_bytes", "blas", "framework_version"})
    EXPECT_TRUE(fields.count(name)) << name;
  const std::string id = device_id(fields);
  EXPECT_EQ(id, device_id(cpu_fingerprint().fields()));
  EXPECT_EQ(id.rfind("cpu-", 0), 0u);
  EXPECT_EQ(id.size(), 4u + 16u);
  auto changed = fields;
  changed["threads_used"] += "0";
  EXPECT_NE(device_id(changed), id);
  // Pinned value: the digest must not change between builds, or every cache would go stale.
  EXPECT_EQ(device_id({}), "cpu-cbf29ce484222325");
  // oneDNN's configs count its implementations in its version's order: a new version is a new
  // device section. A build without oneDNN has no such field, so its ids did not change.
#ifdef TUNECNN_HAVE_ONEDNN
  ASSERT_TRUE(fields.count("onednn"));
  EXPECT_EQ(fields.at("onednn").find('.'), 1u) << fields.at("onednn");
  EXPECT_NE(fp.summary().find("oneDNN " + fields.at("onednn")), std::string::npos) << fp.summary();
#else
  EXPECT_FALSE(fields.count("onednn"));
#endif
  EXPECT_EQ(device_id({{"a", "b"}}, "gpu").rfind("gpu-", 0), 0u);
}

TEST(TuningCache, FindPutThresholds) {
  TuningCache cache = sample_cache();
  ASSERT_NE(cache.find("cpu-0000000000000001", "conv fwd n8 c3 h32"), nullptr);
  EXPECT_EQ(*cache.find("cpu-0000000000000001", "conv fwd n8 c3 h32"),
            make_entry("conv fwd n8 c3 h32"));
  EXPECT_EQ(cache.find("cpu-0000000000000001", "missing"), nullptr);
  EXPECT_EQ(cache.find("cpu-unknown", "conv fwd n8 c3 h32"), nullptr);
  EXPECT_EQ(cache.thresholds("cpu-0000000000000001").mec_t, 8);
  EXPECT_FALSE(cache.thresholds("cpu-0000000000000001").ct.has_value());
  EXPECT_EQ(cache.thresholds("cpu-unknown"), DeviceThresholds{});
  EXPECT_EQ(cache.devices().size(), 2u);
  EXPECT_EQ(cache.devices().at("cpu-0000000000000001").fingerprint, kFingerprint);
}

TEST(TuningCache, YamlRoundTrip) {
  const TuningCache cache = sample_cache();
  std::vector<std::string> warnings;
  const TuningCache back = parse_tuning_cache(cache.to_yaml(), "memory", warnings);
  EXPECT_TRUE(warnings.empty());
  for (const auto& [id, device] : cache.devices()) {
    ASSERT_TRUE(back.devices().count(id));
    EXPECT_EQ(back.devices().at(id), device);
  }
  EXPECT_EQ(back, cache);
}

TEST(TuningCache, TransformBandwidthsRoundTrip) {
  TuningCache cache = sample_cache();
  DeviceThresholds t = cache.thresholds("cpu-0000000000000001");
  t.transform_gbps = {{"NCHW>CHWN", 3.2}, {"NHWC>NCHW", 0.1 + 0.2}, {"CHWN>NHWC", 0}};
  cache.set_thresholds("cpu-0000000000000001", kFingerprint, t);
  const std::string text = cache.to_yaml();
  EXPECT_NE(text.find("      transform_gbps:\n        CHWN>NHWC: 0\n        NCHW>CHWN: 3.2\n"),
            std::string::npos)
      << text;
  std::vector<std::string> warnings;
  EXPECT_EQ(parse_tuning_cache(text, "memory", warnings), cache);  // 0.1 + 0.2 exactly
  EXPECT_TRUE(warnings.empty());
}

// A bad bandwidth drops that pair with a warning naming the file; the device, its other pairs,
// its thresholds and its entries stay.
TEST(TuningCache, BadTransformBandwidthsSkippedRestKept) {
  TuningCache cache = sample_cache();
  DeviceThresholds t = cache.thresholds("cpu-0000000000000001");
  t.transform_gbps = {{"NCHW>CHWN", 3.5}};
  cache.set_thresholds("cpu-0000000000000001", kFingerprint, t);
  std::string text = cache.to_yaml();
  const std::string good = "        NCHW>CHWN: 3.5\n";
  const std::size_t at = text.find(good);
  ASSERT_NE(at, std::string::npos) << text;
  text.insert(at + good.size(),
              "        NCHW>NCHW: 1\n        NCHW>HWCN: 1\n        nchw>chwn: 1\n"
              "        CHWN>NCHW: -1\n        NHWC>NCHW: .nan\n        NHWC>CHWN: .inf\n"
              "        CHWN>NHWC: fast\n        NCHW>NHWC: [1, 2]\n");
  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  write_bytes(path, text);
  const LoadedTuningCache loaded = load_tuning_cache(path);
  EXPECT_EQ(loaded.warnings.size(), 8u);
  for (const std::string& w : loaded.warnings) {
    EXPECT_NE(w.find(path.string()), std::string::npos) << w;
    EXPECT_NE(w.find("transform_gbps"), std::string::npos) << w;
  }
  for (const char* bad : {"NCHW>NCHW", "HWCN", "nchw>chwn", "'-1'", ".nan", ".inf", "fast"})
    EXPECT_TRUE(mentions(loaded.warnings, bad)) << bad;
  EXPECT_EQ(loaded.cache, cache);

  text.replace(text.find("      transform_gbps:\n"), std::string("      transform_gbps:\n").size(),
               "      transform_gbps: 12\n      unused:\n");
  std::vector<std::string> warnings;
  const TuningCache not_a_map = parse_tuning_cache(text, "memory", warnings);
  EXPECT_TRUE(mentions(warnings, "memory, device cpu-0000000000000001: skipped 'transform_gbps'"));
  EXPECT_TRUE(not_a_map.thresholds("cpu-0000000000000001").transform_gbps.empty());
  EXPECT_EQ(not_a_map.thresholds("cpu-0000000000000001").mec_t, 8);
}

TEST(TuningCache, MergeTakesEachTransformPairFromAFirst) {
  TuningCache a, b;
  DeviceThresholds ta, tb;
  ta.transform_gbps = {{"NCHW>CHWN", 1}, {"CHWN>NCHW", 2}};
  tb.transform_gbps = {{"NCHW>CHWN", 10}, {"NHWC>NCHW", 30}};
  a.set_thresholds("cpu-1", kFingerprint, ta);
  b.set_thresholds("cpu-1", kFingerprint, tb);
  const std::map<std::string, double> want = {
      {"NCHW>CHWN", 1}, {"CHWN>NCHW", 2}, {"NHWC>NCHW", 30}};
  EXPECT_EQ(merge(a, b).thresholds("cpu-1").transform_gbps, want);
  EXPECT_EQ(merge(b, a).thresholds("cpu-1").transform_gbps.at("NCHW>CHWN"), 10);
}

TEST(TuningCache, AwkwardStringsRoundTrip) {
  TuningCache cache;
  TuningEntry e = make_entry("key: with \"quotes\", #hash and 'colons'");
  e.provenance = {"", "null", "~"};
  cache.put("cpu-x", {{"model", "true"}, {"blas", "OpenBLAS 0.3.21 NO_AFFINITY"}, {"n", "007"}}, e);
  std::vector<std::string> warnings;
  EXPECT_EQ(parse_tuning_cache(cache.to_yaml(), "memory", warnings), cache);
  EXPECT_TRUE(warnings.empty());
}

// A candidate's determinism is written only when false (older caches have no such field, and
// every CPU candidate is deterministic), and read back as true when absent.
TEST(TuningCache, NonDeterministicCandidatesAreMarkedAndTheRestDefault) {
  const std::string text = sample_cache().to_yaml();
  EXPECT_NE(text.find("deterministic: false"), std::string::npos) << text;
  EXPECT_EQ(text.find("deterministic: true"), std::string::npos) << text;
  std::vector<std::string> warnings;
  const TuningCache back = parse_tuning_cache(text, "memory", warnings);
  const TuningEntry* entry = back.find("cpu-0000000000000001", "conv fwd n8 c3 h32");
  ASSERT_NE(entry, nullptr);
  for (const CandidateResult& c : entry->candidates) EXPECT_EQ(c.deterministic, c.solver != "cudnn") << c.solver;
}

TEST(TuningCache, DeterministicBlockStyleOutput) {
  const std::string text = sample_cache().to_yaml();
  // Built in a different order, the same contents give the same bytes.
  TuningCache reordered;
  reordered.put("cpu-00000000000000ff", {{"model", "other"}}, make_entry("k"));
  reordered.put("cpu-0000000000000001", kFingerprint, make_entry("conv bwd_data n8 c3 h32", 5));
  reordered.put("cpu-0000000000000001", kFingerprint, make_entry("conv fwd n8 c3 h32"));
  DeviceThresholds t;
  t.mec_t = 8;
  t.nt = 128;
  reordered.set_thresholds("cpu-0000000000000001", kFingerprint, t);
  EXPECT_EQ(reordered.to_yaml(), text);
  EXPECT_EQ(text.rfind("format: tunecnn-tuning-cache\nversion: 1\n", 0), 0u) << text;
  EXPECT_NE(text.find("    thresholds:\n      mec_t: 8\n      nt: 128\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("median_ms: 1.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("            config: {}\n"), std::string::npos) << text;
  EXPECT_LT(text.find("conv bwd_data"), text.find("conv fwd"));  // entries by key
}

TEST(TuningCache, MissingFileIsEmptyWithoutWarnings) {
  TempDir dir;
  const LoadedTuningCache loaded = load_tuning_cache(dir.path() / "none.yaml");
  EXPECT_TRUE(loaded.cache.empty());
  EXPECT_TRUE(loaded.warnings.empty());
}

TEST(TuningCache, SaveAndLoadCreatesFolders) {
  TempDir dir;
  const fs::path path = dir.path() / "a" / "b" / "tuning.yaml";
  save_tuning_cache(sample_cache(), path);
  const LoadedTuningCache loaded = load_tuning_cache(path);
  EXPECT_TRUE(loaded.warnings.empty());
  EXPECT_EQ(loaded.cache, sample_cache());
}

// Each unusable file: a warning naming the file, its bytes moved aside untouched, an empty cache,
// and nothing left at the original path.
void expect_set_aside(const std::string& bytes, const std::string& problem) {
  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  write_bytes(path, bytes);
  const LoadedTuningCache loaded = load_tuning_cache(path);
  EXPECT_TRUE(loaded.cache.empty());
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_NE(loaded.warnings[0].find(path.string()), std::string::npos) << loaded.warnings[0];
  EXPECT_NE(loaded.warnings[0].find(problem), std::string::npos) << loaded.warnings[0];
  EXPECT_FALSE(fs::exists(path));
  const auto aside = siblings(path, ".corrupt-");
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(read_bytes(aside[0]), bytes);
}

TEST(TuningCache, CorruptFileSetAside) {
  expect_set_aside("format: tunecnn-tuning-cache\nversion: [1\n  devices: {{{\n", "corrupt");
  const char junk[] = "\x01\x02\xff binary junk\0";  // the embedded NUL included, the terminator not
  expect_set_aside(std::string(junk, sizeof junk - 1), "tuning.yaml");
  expect_set_aside("", "tuning.yaml");
}

TEST(TuningCache, TruncatedFileSetAside) {
  const std::string full = sample_cache().to_yaml();
  // Cut within an entry and at a line boundary: both must be refused, not half-loaded.
  expect_set_aside(full.substr(0, full.size() / 2), "tuning.yaml");
  const std::size_t cut = full.find("  - id: cpu-00000000000000ff");
  ASSERT_NE(cut, std::string::npos);
  expect_set_aside(full.substr(0, cut), "truncated");
}

TEST(TuningCache, NewerVersionSetAside) {
  std::string text = sample_cache().to_yaml();
  text.replace(text.find("version: 1"), 10, "version: 2");
  expect_set_aside(text, "newer");
}

TEST(TuningCache, ForeignFormatSetAside) {
  expect_set_aside("format: something-else\nversion: 1\ndevices: []\n", "not a tunecnn");
  expect_set_aside("- just\n- a list\n", "not a tunecnn");
}

TEST(TuningCache, AFolderAtTheCachePathIsRefusedAndLeftAlone) {
  TempDir dir;
  const fs::path folder = dir.path() / "my-results";
  fs::create_directories(folder);
  write_bytes(folder / "notes.txt", "a user's file");
  const std::vector<std::function<void()>> uses = {
      [&] { load_tuning_cache(folder); }, [&] { save_tuning_cache(sample_cache(), folder); },
      [&] { update_tuning_cache_file(folder, [](TuningCache&) {}); }};
  for (const auto& use : uses) {
    try {
      use();
      ADD_FAILURE() << "a folder must not serve as the tuning cache";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(folder.string() + " is a folder: name a file"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(read_bytes(folder / "notes.txt"), "a user's file");
  EXPECT_TRUE(siblings(folder, ".corrupt-").empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

TEST(TuningCache, SecondBadFileGetsItsOwnName) {
  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  write_bytes(path, "junk: [");
  load_tuning_cache(path);
  write_bytes(path, "more junk: [");
  load_tuning_cache(path);  // within the same second: must not overwrite the first copy
  const auto aside = siblings(path, ".corrupt-");
  ASSERT_EQ(aside.size(), 2u);
  std::set<std::string> contents = {read_bytes(aside[0]), read_bytes(aside[1])};
  EXPECT_EQ(contents, (std::set<std::string>{"junk: [", "more junk: ["}));
}

TEST(TuningCache, BadEntriesSkippedRestKept) {
  TuningCache cache;
  cache.put("cpu-1", kFingerprint, make_entry("good"));
  cache.put("cpu-1", kFingerprint, make_entry("unknown solver"));
  cache.put("cpu-1", kFingerprint, make_entry("bad runs"));
  cache.put("cpu-1", kFingerprint, make_entry("bad layout"));
  cache.put("cpu-1", kFingerprint, make_entry("nan time"));
  cache.put("cpu-1", kFingerprint, make_entry("negative time"));
  std::string text = cache.to_yaml();
  const auto replace_after = [&text](const std::string& key, const std::string& from,
                                     const std::string& to) {
    const std::size_t at = text.find(from, text.find("key: " + key));
    ASSERT_NE(at, std::string::npos);
    text.replace(at, from.size(), to);
  };
  replace_after("unknown solver", "solver: mec", "solver: warp_drive");
  replace_after("bad runs", "runs: 10", "runs: many");
  replace_after("bad layout", "layout: NCHW", "layout: NWHC");
  replace_after("nan time", "median_ms: 1.25", "median_ms: .nan");
  replace_after("negative time", "spread_ms: 0.0625", "spread_ms: -0.0625");

  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  write_bytes(path, text);
  const LoadedTuningCache loaded = load_tuning_cache(path);
  ASSERT_EQ(loaded.warnings.size(), 5u);
  EXPECT_TRUE(mentions(loaded.warnings, "warp_drive"));
  EXPECT_TRUE(mentions(loaded.warnings, "'nan time'"));
  EXPECT_TRUE(mentions(loaded.warnings, "median_ms .nan (needs a finite time >= 0)"));
  EXPECT_TRUE(mentions(loaded.warnings, "spread_ms -0.0625 (needs a finite time >= 0)"));
  EXPECT_TRUE(mentions(loaded.warnings, "runs"));
  EXPECT_TRUE(mentions(loaded.warnings, "NWHC"));
  EXPECT_TRUE(mentions(loaded.warnings, path.string()));
  ASSERT_NE(loaded.cache.find("cpu-1", "good"), nullptr);
  EXPECT_EQ(*loaded.cache.find("cpu-1", "good"), make_entry("good"));
  EXPECT_EQ(loaded.cache.devices().at("cpu-1").entries.size(), 1u);
  EXPECT_EQ(read_bytes(path), text);  // loading never rewrites a usable file
}

// A garbage cache's escape sequences never reach a message (and through it the terminal), nor the
// cache itself, where `autotune show` would print them.
TEST(TuningCache, ControlCharactersAreRefusedAndNeverEchoed) {
  TuningCache cache;
  cache.put("cpu-1", {{"model", "EVIL CPU"}}, make_entry("good"));
  cache.put("cpu-2", kFingerprint, make_entry("BAD KEY"));
  cache.put("cpu-2", kFingerprint, make_entry("fine"));
  std::string text = cache.to_yaml();
  text.replace(text.find("EVIL CPU"), 8, "\e[31mEVIL\a");  // YAML escapes: ESC and BEL once parsed
  text.replace(text.find("BAD KEY"), 7, "\e[2J");
  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  write_bytes(path, text);
  const LoadedTuningCache loaded = load_tuning_cache(path);
  EXPECT_EQ(loaded.cache.devices().count("cpu-1"), 0u) << "a fingerprint with control bytes";
  ASSERT_EQ(loaded.cache.devices().count("cpu-2"), 1u);
  EXPECT_EQ(loaded.cache.devices().at("cpu-2").entries.size(), 1u);
  ASSERT_EQ(loaded.warnings.size(), 2u);
  EXPECT_TRUE(mentions(loaded.warnings, "holds control characters: '\\x1b[31mEVIL\\x07'"));
  EXPECT_TRUE(mentions(loaded.warnings, "entry '\\x1b[2J'"));
  for (const std::string& warning : loaded.warnings) EXPECT_EQ(printable(warning), warning);
}

// A GPU section's entries name GPU solvers: loading keeps them, rather than skipping them as
// unknown (with a warning) because the CPU's registry lacks them, which made every GPU run
// re-tune the layers cuDNN had won.
TEST(TuningCache, GpuSolverEntriesKept) {
  if (!cuda_built()) GTEST_SKIP() << "this build has no CUDA backend";
  TuningCache cache;
  TuningEntry e = make_entry("conv fwd gpu");
  e.solver = "cudnn";
  e.config = TuneConfig{{{"algo", 1}}};
  e.candidates.front().solver = "cudnn";
  e.candidates.front().config = e.config;
  cache.put("cuda-1", {{"name", "Test GPU"}}, e);
  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  write_bytes(path, cache.to_yaml());
  const LoadedTuningCache loaded = load_tuning_cache(path);
  EXPECT_TRUE(loaded.warnings.empty()) << loaded.warnings.front();
  ASSERT_NE(loaded.cache.find("cuda-1", "conv fwd gpu"), nullptr);
  EXPECT_EQ(*loaded.cache.find("cuda-1", "conv fwd gpu"), e);
}

TEST(TuningCache, UpdateKeepsWhatItCannotReadInACopy) {
  TuningCache cache;
  cache.put("cpu-1", kFingerprint, make_entry("good"));
  cache.put("cpu-1", kFingerprint, make_entry("broken"));
  cache.put("cpu-1", kFingerprint, make_entry("future"));
  std::string text = cache.to_yaml();
  text.replace(text.find("runs: 10", text.find("key: broken")), 8, "runs: -3");
  text.replace(text.find("solver: mec", text.find("key: future")), 11, "solver: from_the_future");
  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  write_bytes(path, text);
  update_tuning_cache_file(path, [](TuningCache& c) { c.put("cpu-1", {}, make_entry("new")); });
  // A solver this build lacks is kept (a newer build wrote it); the malformed entry is dropped
  // from the new file but its bytes survive in the .bad copy.
  std::vector<std::string> warnings;
  const TuningCache now =
      parse_tuning_cache(read_bytes(path), "t", warnings, [](std::string_view) { return true; });
  EXPECT_NE(now.find("cpu-1", "good"), nullptr);
  EXPECT_NE(now.find("cpu-1", "new"), nullptr);
  EXPECT_NE(now.find("cpu-1", "future"), nullptr);
  EXPECT_EQ(now.find("cpu-1", "broken"), nullptr);
  const auto copies = siblings(path, ".bad");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(read_bytes(copies[0]), text);
}

TEST(TuningCache, UpdateOverBadFileMovesItAsideFirst) {
  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  write_bytes(path, "not: [yaml");
  const LoadedTuningCache result =
      update_tuning_cache_file(path, [](TuningCache& c) { c.put("cpu-1", {}, make_entry("k")); });
  EXPECT_TRUE(mentions(result.warnings, "moved it aside"));
  const auto aside = siblings(path, ".corrupt-");
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(read_bytes(aside[0]), "not: [yaml");
  const LoadedTuningCache loaded = load_tuning_cache(path);
  EXPECT_TRUE(loaded.warnings.empty());
  EXPECT_NE(loaded.cache.find("cpu-1", "k"), nullptr);
}

TEST(TuningCache, UpdateMergesIntoWhatIsOnDisk) {
  TempDir dir;
  const fs::path path = dir.path() / "tuning.yaml";
  save_tuning_cache(sample_cache(), path);
  update_tuning_cache_file(path, [](TuningCache& c) { c.put("cpu-new", {}, make_entry("x")); });
  const TuningCache now = load_tuning_cache(path).cache;
  EXPECT_EQ(now.devices().size(), 3u);
  EXPECT_EQ(now.devices().at("cpu-0000000000000001"),
            sample_cache().devices().at("cpu-0000000000000001"));
}

TEST(TuningCache, MergeKeepsBetterMeasured) {
  TuningCache a, b;
  a.put("cpu-1", kFingerprint, make_entry("more runs in a", 20));
  b.put("cpu-1", kFingerprint, make_entry("more runs in a", 10, "2030-01-01T00:00:00Z"));
  a.put("cpu-1", kFingerprint, make_entry("newer in b", 10, "2024-01-01T00:00:00Z"));
  b.put("cpu-1", kFingerprint, make_entry("newer in b", 10, "2024-06-01T00:00:00Z"));
  a.put("cpu-1", kFingerprint, make_entry("only a"));
  b.put("cpu-2", {{"model", "b"}}, make_entry("only b"));
  DeviceThresholds ta, tb;
  ta.mec_t = 8;
  tb.mec_t = 16;
  tb.ct = 32;
  a.set_thresholds("cpu-1", kFingerprint, ta);
  b.set_thresholds("cpu-1", kFingerprint, tb);

  const TuningCache m = merge(a, b);
  EXPECT_EQ(*m.find("cpu-1", "more runs in a"), *a.find("cpu-1", "more runs in a"));
  EXPECT_EQ(*m.find("cpu-1", "newer in b"), *b.find("cpu-1", "newer in b"));
  EXPECT_NE(m.find("cpu-1", "only a"), nullptr);
  EXPECT_NE(m.find("cpu-2", "only b"), nullptr);
  EXPECT_EQ(m.devices().at("cpu-2").fingerprint,
            (std::map<std::string, std::string>{{"model", "b"}}));
  EXPECT_EQ(m.thresholds("cpu-1").mec_t, 8);  // both have it: a's
  EXPECT_EQ(m.thresholds("cpu-1").ct, 32);    // only b has it
  EXPECT_FALSE(m.thresholds("cpu-1").nt.has_value());
  // The better entry wins whichever side it is on.
  EXPECT_EQ(*merge(b, a).find("cpu-1", "more runs in a"), *a.find("cpu-1", "more runs in a"));
  EXPECT_EQ(merge(a, TuningCache{}), a);
  EXPECT_EQ(merge(TuningCache{}, b), b);
}

using testing::ScopedEnv;

TEST(TuningCache, DefaultPath) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv cache("TUNECNN_TUNE_CACHE", "/tmp/my-cache.yaml");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_tuning_cache_path(), fs::path("/tmp/my-cache.yaml"));
  }
  ScopedEnv cache("TUNECNN_TUNE_CACHE", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_tuning_cache_path(), fs::path("/xdg/tunecnn/tuning.yaml"));
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    EXPECT_EQ(default_tuning_cache_path(), fs::path("/home/someone/.cache/tunecnn/tuning.yaml"));
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(default_tuning_cache_path(), fs::path("/home/someone/.cache/tunecnn/tuning.yaml"));
}

// Two processes each add 50 entries, one update per entry, interleaving as the scheduler likes.
// Without the lock, a read-modify-write would drop the other's entries.
void expect_two_processes_lose_nothing() {
  TempDir dir;
  const fs::path path = dir.path() / "shared" / "tuning.yaml";
  constexpr int kPerProcess = 50;
  std::vector<pid_t> children;
  for (int p = 0; p < 2; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        for (int i = 0; i < kPerProcess; ++i) {
          const std::string key = "p" + std::to_string(p) + "-k" + std::to_string(i);
          update_tuning_cache_file(
              path, [&](TuningCache& c) { c.put("cpu-shared", kFingerprint, make_entry(key)); });
        }
      } catch (...) {
        status = 1;
      }
      ::_exit(status);  // no gtest teardown or static destructors in the child
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  const LoadedTuningCache loaded = load_tuning_cache(path);
  EXPECT_TRUE(loaded.warnings.empty());
  ASSERT_EQ(loaded.cache.devices().count("cpu-shared"), 1u);
  EXPECT_EQ(loaded.cache.devices().at("cpu-shared").entries.size(), 2u * kPerProcess);
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < kPerProcess; ++i)
      EXPECT_NE(loaded.cache.find("cpu-shared", "p" + std::to_string(p) + "-k" + std::to_string(i)),
                nullptr);
  EXPECT_TRUE(siblings(path, ".tmp.").empty());  // no temporary files left behind
  EXPECT_FALSE(fs::exists(path.string() + ".lock.owner"));  // an exclusive-file lock is released
}

TEST(TuningCache, TwoProcessesLoseNothing) {
  ScopedEnv flock("TUNECNN_CACHE_LOCK", "flock");
  expect_two_processes_lose_nothing();
}

// The scheme for NFS and other file systems where flock may not lock across hosts.
TEST(TuningCache, TwoProcessesLoseNothingUnderTheExclusiveFileLock) {
  ScopedEnv exclusive("TUNECNN_CACHE_LOCK", "exclusive-file");
  expect_two_processes_lose_nothing();
}

}  // namespace
}  // namespace tunecnn
