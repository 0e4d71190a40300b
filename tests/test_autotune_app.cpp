// The `autotune` command line, driven through run_autotune with captured streams: help and usage
// errors, and show / explain / merge / diff on caches written here.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/autotune_cli/autotune_app.h"
#include "apps/autotune_cli/options.h"
#include "autotune/tuning_cache.h"
#include "core/threading.h"
#include "support/autotune_runs.h"
#include "support/scoped_env.h"
#include "support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

using Outcome = testing::AutotuneOutcome;

Outcome autotune(const std::vector<std::string>& args) { return testing::run_autotune_captured(args); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Table rows are padded to their column widths; tests compare them with single spaces.
std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

bool has_row(const std::string& text, const std::string& cells) {
  return contains(squeeze(text), cells);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string kKey3x3 = "conv fwd mb8 ic4 ih12 iw12 oc8 kh3 kw3 sh1 sw1 ph1 pw1 g1";
const std::string kKey5x5 = "conv fwd mb8 ic1 ih28 iw28 oc6 kh5 kw5 sh1 sw1 ph2 pw2 g1";
const std::map<std::string, std::string> kOtherFields = {{"model", "Other CPU"},
                                                         {"threads_used", "64"}};
// A GPU's fingerprint fields (autotune/gpu_fingerprint.cpp), as an H100 wrote them.
const std::map<std::string, std::string> kGpuFields = {
    {"name", "NVIDIA H100 80GB HBM3"}, {"sm_count", "132"}, {"compute_capability", "9.0"},
    {"cuda_runtime", "13.0"},          {"cublas", "13.1.0"}, {"cudnn", "9.14.0"},
    {"framework_version", "0.1.0"}};

CandidateResult candidate(const std::string& solver, double median_ms, int runs,
                          TuneConfig config = {}, bool correct = true) {
  CandidateResult c;
  c.solver = solver;
  c.config = std::move(config);
  c.median_ms = median_ms;
  c.spread_ms = median_ms / 100;
  c.runs = runs;
  c.workspace_bytes = 4096;
  c.correct = correct;
  return c;
}

// An entry choosing its first candidate.
TuningEntry entry(const std::string& key, std::vector<CandidateResult> candidates,
                  const std::string& date = "2026-01-02T03:04:05Z") {
  TuningEntry e;
  e.key = key;
  e.solver = candidates.front().solver;
  e.config = candidates.front().config;
  e.layout = candidates.front().layout;
  e.candidates = std::move(candidates);
  e.provenance = {"testhost", date, "0.1.0"};
  return e;
}

// The 3x3 layer as tuned here: Winograd won, im2col (the default) is 2x slower, the reference
// 20x, and one MEC config disagreed with the reference.
TuningEntry tuned_3x3(int runs = 10, const std::string& date = "2026-01-02T03:04:05Z") {
  return entry(kKey3x3,
               {candidate("winograd_f2x3", 1.5, runs, TuneConfig{{{"tiles", 8}}}),
                candidate("im2col_gemm", 3.0, runs, TuneConfig{{{"chunk", 1}}}),
                candidate("mec", 9.0, runs, TuneConfig{{{"chunk", 8}}}, false),
                candidate("direct", 30.0, runs)},
               date);
}

class AutotuneApp : public ::testing::Test {
 protected:
  void SetUp() override {
    set_num_threads(0);  // the subcommands' default --threads, so this_device() matches theirs
    here_ = this_device();
  }
  fs::path path(const std::string& name) const { return dir_.path() / name; }
  fs::path save(const TuningCache& cache, const std::string& name) const {
    save_tuning_cache(cache, path(name));
    return path(name);
  }
  TuningCache load(const fs::path& file) const {
    std::vector<std::string> warnings;
    return parse_tuning_cache(read_text(file), file.string(), warnings);
  }

  testing::TempDir dir_;
  DeviceIdentity here_;
  // No system cache unless a test names one: a site file installed beside the test programs
  // must not change what these tests see.
  testing::ScopedEnv no_system_cache_{"TUNECNN_SYSTEM_TUNE_CACHE", ""};
};

// ---- the command line ----

TEST_F(AutotuneApp, HelpListsSubcommandsAndEverySubcommandHasHelp) {
  const Outcome overview = autotune({"--help"});
  EXPECT_EQ(overview.status, 0);
  for (const std::string sub :
       {"profile", "calibrate", "show", "explain", "merge", "export", "fingerprint", "diff"}) {
    EXPECT_TRUE(contains(overview.out, "  " + sub)) << overview.out;
    const Outcome help = autotune({sub, "--help"});
    EXPECT_EQ(help.status, 0) << sub;
    EXPECT_TRUE(contains(help.out, "usage: autotune " + sub)) << help.out;
    EXPECT_TRUE(contains(help.out, "--tune-cache")) << help.out;
    EXPECT_TRUE(contains(help.out, "--threads")) << help.out;
  }
}

TEST_F(AutotuneApp, FingerprintPrintsThisCpusSectionIdAndEveryField) {
  const Outcome run = autotune({"fingerprint"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "cpu " + here_.id + "\n")) << run.out;
  for (const auto& [name, value] : here_.fields)
    EXPECT_TRUE(contains(run.out, "  " + name + ": " + value + "\n")) << name << " missing in:\n" << run.out;
  EXPECT_EQ(autotune({"fingerprint", "extra"}).status, 2);
}

TEST_F(AutotuneApp, UsageErrorsExitTwoAndSayWhatToDo) {
  const Outcome none = autotune({});
  EXPECT_EQ(none.status, 2);
  EXPECT_TRUE(contains(none.err, "usage: autotune SUBCOMMAND")) << none.err;

  const Outcome unknown = autotune({"frobnicate"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_TRUE(contains(unknown.err, "unknown subcommand 'frobnicate'")) << unknown.err;
  EXPECT_TRUE(
      contains(unknown.err, "profile, calibrate, show, explain, merge, export, fingerprint, diff"))
      << unknown.err;

  const Outcome option = autotune({"show", "--bogus", "x.yaml"});
  EXPECT_EQ(option.status, 2);
  EXPECT_TRUE(contains(option.err, "unknown option --bogus")) << option.err;

  const Outcome missing_value = autotune({"show", "--tune-cache"});
  EXPECT_EQ(missing_value.status, 2);
  EXPECT_TRUE(contains(missing_value.err, "--tune-cache needs a value")) << missing_value.err;

  const Outcome threads = autotune({"show", "--threads", "two"});
  EXPECT_EQ(threads.status, 2);
  EXPECT_TRUE(contains(threads.err, "--threads expects a whole number")) << threads.err;

  const Outcome arity = autotune({"diff", "only-one.yaml"});
  EXPECT_EQ(arity.status, 2);
  EXPECT_TRUE(contains(arity.err, "usage: autotune diff A B")) << arity.err;

  const Outcome no_output = autotune({"merge", "a.yaml", "b.yaml"});
  EXPECT_EQ(no_output.status, 2);
  EXPECT_TRUE(contains(no_output.err, "-o C")) << no_output.err;
}

// ---- show ----

TEST_F(AutotuneApp, ShowPrintsDevicesThresholdsAndEntriesMarkingThisMachine) {
  TuningCache cache;
  cache.put(here_.id, here_.fields, tuned_3x3());
  DeviceThresholds thresholds;
  thresholds.mec_t = 96;
  thresholds.ct = 32;
  thresholds.transform_gbps["NCHW>CHWN"] = 3.5;
  cache.set_thresholds(here_.id, here_.fields, thresholds);
  cache.put("cpu-other", kOtherFields, entry(kKey5x5, {candidate("im2col_gemm", 0.25, 7)}));
  cache.put("cuda-h100", kGpuFields, entry(kKey5x5, {candidate("cudnn", 0.05, 7)}));
  const fs::path file = save(cache, "show.yaml");

  const Outcome run = autotune({"show", file.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "3 device(s)")) << run.out;
  EXPECT_TRUE(contains(run.out, "fingerprint: NVIDIA H100 80GB HBM3, 132 SMs, compute 9.0; "
                                "CUDA 13.0, cuBLAS 13.1.0, cuDNN 9.14.0; tunecnn 0.1.0"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "device " + here_.id + "  (this machine)")) << run.out;
  EXPECT_TRUE(contains(run.out, "device cpu-other\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "fingerprint: Other CPU, 64/? threads")) << run.out;
  EXPECT_TRUE(contains(run.out, "mec_t 96, ct 32, transform_gbps NCHW>CHWN 3.5")) << run.out;
  EXPECT_TRUE(contains(run.out, "thresholds: not calibrated")) << run.out;
  // The table row: key, solver, config, layout, median, candidates, date, host.
  EXPECT_TRUE(has_row(run.out, "key solver config layout median ms candidates date host"))
      << run.out;
  EXPECT_TRUE(has_row(
      run.out, kKey3x3 + " winograd_f2x3 tiles=8 NCHW 1.500 4 2026-01-02T03:04:05Z testhost"))
      << run.out;
  EXPECT_TRUE(has_row(run.out, kKey5x5 + " im2col_gemm - NCHW 0.250 1")) << run.out;

  // --tune-cache names the file when no F is given.
  const Outcome by_option = autotune({"show", "--tune-cache", file.string()});
  EXPECT_EQ(by_option.status, 0);
  EXPECT_EQ(by_option.out, run.out);
}

TEST_F(AutotuneApp, ShowSaysWhenThisMachineHasNoSection) {
  TuningCache cache;
  cache.put("cpu-other", kOtherFields, entry(kKey5x5, {candidate("im2col_gemm", 0.25, 7)}));
  const Outcome run = autotune({"show", save(cache, "other.yaml").string()});
  EXPECT_EQ(run.status, 0);
  EXPECT_TRUE(contains(run.out, "no section for this machine (" + here_.id + ")")) << run.out;
  EXPECT_FALSE(contains(run.out, "(this machine)")) << run.out;
}

TEST_F(AutotuneApp, MissingOrCorruptFilesAreErrorsNamingThemAndAreLeftAlone) {
  const Outcome missing = autotune({"show", path("nowhere.yaml").string()});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(contains(missing.err, "no tuning cache at " + path("nowhere.yaml").string()))
      << missing.err;

  const fs::path corrupt = path("corrupt.yaml");
  std::ofstream(corrupt) << "format: tunecnn-tuning-cache\nversion: 1\ndevices: [unclosed\n";
  const std::string bytes = read_text(corrupt);
  const Outcome bad = autotune({"show", corrupt.string()});
  EXPECT_EQ(bad.status, 1);
  EXPECT_TRUE(contains(bad.err, corrupt.string())) << bad.err;
  EXPECT_EQ(read_text(corrupt), bytes);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_.path())) ++files;
  EXPECT_EQ(files, 1) << "nothing moved aside or created next to the input";
}

// ---- profile ----

// The last line of a profile run: "profiled N, reused M, seconds S".
std::string last_line(const std::string& text) {
  const std::size_t end = text.find_last_not_of('\n');
  return text.substr(text.rfind('\n', end) + 1, end - text.rfind('\n', end));
}

TEST_F(AutotuneApp, ProfileTunesLenetOnceThenReusesEveryKey) {
  const fs::path file = path("profile.yaml");
  const std::vector<std::string> args = {"profile", "--model",      "lenet",      "--batch",
                                         "8",       "--tune-cache", file.string()};
  const Outcome first = autotune(args);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_TRUE(contains(first.err, "[1/")) << first.err;  // the progress lines
  EXPECT_TRUE(has_row(first.out,
                      "layer key candidates layout fwd bwd_data bwd_weights tuned ms "
                      "default ms speedup workspace"))
      << first.out;
  EXPECT_TRUE(contains(first.out, "conv fwd mb8 ic1 ih28 iw28")) << first.out;
  const std::string summary = last_line(first.out);
  int profiled = 0, reused = -1;
  double seconds = -1;
  ASSERT_EQ(std::sscanf(summary.c_str(), "profiled %d, reused %d, seconds %lf", &profiled, &reused,
                        &seconds),
            3)
      << summary;
  EXPECT_GT(profiled, 0);
  EXPECT_EQ(reused, 0);
  EXPECT_GT(seconds, 0);
  EXPECT_EQ(load(file).devices().at(here_.id).entries.size(), static_cast<std::size_t>(profiled));

  const Outcome second = autotune(args);
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(last_line(second.out),
            "profiled 0, reused " + std::to_string(profiled) + ", seconds 0.00")
      << second.out;
  EXPECT_FALSE(contains(second.err, "[1/")) << second.err;
}

// --memory-budget: the plan that fits a training step at the profiled batch, said in one line
// above the table; a budget nothing fits is an error saying by how much, after the measurements
// are in the cache (a later run with a larger budget profiles nothing).
TEST_F(AutotuneApp, ProfileUnderAMemoryBudgetSaysWhatFitsOrByHowMuchItIsOver) {
  const fs::path file = path("budget.yaml");
  const std::vector<std::string> args = {"profile", "--model", "lenet", "--batch", "8", "--tune-cache", file.string(),
                                         "--memory-budget"};
  std::vector<std::string> small = args, ample = args;
  small.push_back("1M");
  ample.push_back("64M");
  const Outcome over = autotune(small);
  EXPECT_EQ(over.status, 1);
  EXPECT_TRUE(contains(over.err, "--memory-budget 1.0 MiB is too small: the step's predicted peak is ")) << over.err;
  // Which layer keeps the most depends on the layouts the timings chose.
  EXPECT_TRUE(contains(over.err, "The layers keeping the most then: ")) << over.err;
  EXPECT_TRUE(contains(over.err, "conv1 ")) << over.err;
  ASSERT_TRUE(fs::exists(file));
  const std::size_t entries = load(file).devices().at(here_.id).entries.size();
  EXPECT_GT(entries, 0u);

  const Outcome fits = autotune(ample);
  ASSERT_EQ(fits.status, 0) << fits.err;
  const std::string budget_line = "memory budget: predicted peak ";
  ASSERT_TRUE(contains(fits.out, budget_line)) << fits.out;
  double peak_mib = 0;
  const std::string line = fits.out.substr(fits.out.find(budget_line));
  ASSERT_EQ(std::sscanf(line.c_str(), "memory budget: predicted peak %lf MiB within 64.0 MiB as planned", &peak_mib), 1)
      << line;
  EXPECT_GT(peak_mib, 1.0);  // over the budget refused above
  EXPECT_LT(peak_mib, 64.0);
  EXPECT_LT(fits.out.find(budget_line), fits.out.find("layer ")) << "the line comes before the table";
  EXPECT_EQ(last_line(fits.out), "profiled 0, reused " + std::to_string(entries) + ", seconds 0.00") << fits.out;
}

TEST_F(AutotuneApp, ProfileRejectsBadOptionsBeforeTimingAnything) {
  const Outcome data = autotune({"profile", "--data", "svhn"});
  EXPECT_EQ(data.status, 2);
  EXPECT_TRUE(contains(data.err, "unknown --data 'svhn' (expected fashion-mnist, mnist, cifar10"))
      << data.err;
  const Outcome batch = autotune({"profile", "--batch", "0"});
  EXPECT_EQ(batch.status, 2);
  EXPECT_TRUE(contains(batch.err, "--batch must be positive")) << batch.err;
  const Outcome off = autotune({"profile", "--tune", "off"});
  EXPECT_EQ(off.status, 2);
  EXPECT_TRUE(contains(off.err, "--tune off times nothing")) << off.err;
  const Outcome budget = autotune({"profile", "--max-workspace", "lots"});
  EXPECT_EQ(budget.status, 2);
  EXPECT_TRUE(contains(budget.err, "--max-workspace must be a number of bytes")) << budget.err;
  const Outcome memory = autotune({"profile", "--memory-budget", "lots"});
  EXPECT_EQ(memory.status, 2);
  EXPECT_TRUE(contains(memory.err, "--memory-budget must be a size such as 2G, 512M or 1048576, got 'lots'"))
      << memory.err;
  const Outcome model =
      autotune({"profile", "--model", "resnet9000", "--tune-cache", path("unused.yaml").string()});
  EXPECT_EQ(model.status, 1);
  EXPECT_TRUE(contains(model.err, "unknown model 'resnet9000'")) << model.err;
}

// ---- calibrate ----

TEST_F(AutotuneApp, CalibrateStoresThisDevicesThresholdsKeepingItsEntries) {
  TuningCache cache;
  cache.put(here_.id, here_.fields, tuned_3x3());
  const fs::path file = save(cache, "calibrate.yaml");
  const Outcome run = autotune({"calibrate", "--tune-cache", file.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "calibrating " + here_.id)) << run.out;
  EXPECT_TRUE(contains(run.out, "  calibrate mec_t: ow ")) << run.out;  // progress lines
  EXPECT_TRUE(contains(run.out, "stored in " + file.string())) << run.out;
  const TuningCache stored = load(file);
  const DeviceThresholds t = stored.thresholds(here_.id);
  EXPECT_TRUE(t.mec_t && t.ct && t.nt);
  EXPECT_FALSE(t.transform_gbps.empty());
  EXPECT_TRUE(contains(run.out, "thresholds: mec_t " + std::to_string(*t.mec_t))) << run.out;
  EXPECT_NE(stored.find(here_.id, kKey3x3), nullptr);
}

// ---- explain ----

TEST_F(AutotuneApp, ExplainListsSolversAndThisMachinesCandidatesWithSpeedups) {
  TuningCache cache;
  cache.put(here_.id, here_.fields, tuned_3x3());
  const fs::path file = save(cache, "explain.yaml");

  const Outcome run = autotune({"explain", kKey3x3, "--tune-cache", file.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "winograd_f2x3: applicable")) << run.out;
  EXPECT_TRUE(contains(run.out, "direct (reference): applicable")) << run.out;
  EXPECT_TRUE(contains(run.out, "layouts: CHWN")) << run.out;
  EXPECT_TRUE(contains(run.out, ": workspace ")) << run.out;
  EXPECT_TRUE(contains(run.out, "default (untuned): im2col_gemm chunk=1 NCHW")) << run.out;
  EXPECT_TRUE(contains(run.out, "cached for this machine (" + here_.id + ")")) << run.out;
  EXPECT_TRUE(contains(run.out, "chosen (*): winograd_f2x3 tiles=8 NCHW")) << run.out;
  // The chosen row: 20x faster than the slowest correct candidate, 2x faster than the default.
  EXPECT_TRUE(has_row(run.out,
                      "* winograd_f2x3 tiles=8 NCHW 1.500 0.015 10 4.0 KiB correct "
                      "20.00x 2.00x\n"))
      << run.out;
  EXPECT_TRUE(has_row(run.out,
                      " im2col_gemm chunk=1 NCHW 3.000 0.030 10 4.0 KiB correct 10.00x "
                      "1.00x\n"))
      << run.out;
  // A disqualified candidate gets no speedup: its time means nothing.
  EXPECT_TRUE(has_row(run.out, " mec chunk=8 NCHW 9.000 0.090 10 4.0 KiB DISQUALIFIED - -\n"))
      << run.out;
}

TEST_F(AutotuneApp, ExplainSaysWhySolversDoNotApply) {
  const Outcome run = autotune({"explain", kKey5x5, "--tune-cache", path("none.yaml").string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "winograd_f2x3: not applicable: ")) << run.out;
  EXPECT_TRUE(contains(run.out, "no tuning cache at " + path("none.yaml").string())) << run.out;
  EXPECT_TRUE(contains(run.out, "autotune profile")) << run.out;
}

TEST_F(AutotuneApp, ExplainFallsBackToOtherDevicesNamingThem) {
  TuningCache cache;
  cache.put("cpu-other", kOtherFields, tuned_3x3());
  const fs::path file = save(cache, "other.yaml");
  // The key may also come unquoted, as separate words.
  std::vector<std::string> args = {"explain", "--tune-cache", file.string()};
  std::istringstream words(kKey3x3);
  for (std::string word; words >> word;) args.push_back(word);
  const Outcome run = autotune(args);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "cached for device cpu-other (Other CPU")) << run.out;
  EXPECT_TRUE(contains(run.out, "not this machine")) << run.out;

  const Outcome uncached = autotune({"explain", kKey5x5, "--tune-cache", file.string()});
  EXPECT_EQ(uncached.status, 0);
  EXPECT_TRUE(contains(uncached.out, "not in the cache")) << uncached.out;
  EXPECT_TRUE(contains(uncached.out, "autotune profile")) << uncached.out;
}

TEST_F(AutotuneApp, ExplainRejectsABadKey) {
  const Outcome run = autotune({"explain", "conv fwd mb8 ic4"});
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(contains(run.err, "bad conv key 'conv fwd mb8 ic4': field 'ih' is missing"))
      << run.err;
}

TEST_F(AutotuneApp, ExplainTakesPoolingAndSoftmaxKeys) {
  const std::string pool_key = "pool max fwd mb64 c16 ih28 iw28 kh2 kw2 sh2 sw2 ph0 pw0";
  CandidateResult chwn = candidate("pool_tiled", 0.1, 9, TuneConfig{{{"fx", 2}, {"fy", 1}}});
  chwn.layout = Layout::CHWN;
  TuningCache cache;
  cache.put(here_.id, here_.fields,
            entry(pool_key, {chwn, candidate("pool_tiled", 0.4, 9, TuneConfig{{{"fx", 1}, {"fy", 1}}})}));
  const fs::path file = save(cache, "pool.yaml");
  const Outcome pool = autotune({"explain", pool_key, "--tune-cache", file.string()});
  ASSERT_EQ(pool.status, 0) << pool.err;
  EXPECT_TRUE(contains(pool.out, "pool_tiled: applicable")) << pool.out;
  EXPECT_TRUE(contains(pool.out, "pool_direct (reference): applicable")) << pool.out;
  EXPECT_TRUE(contains(pool.out, "default (untuned): pool_tiled fx=1,fy=1 NCHW")) << pool.out;
  EXPECT_TRUE(contains(pool.out, "chosen (*): pool_tiled fx=2,fy=1 CHWN")) << pool.out;
  EXPECT_TRUE(has_row(pool.out, "* pool_tiled fx=2,fy=1 CHWN 0.100 0.001 9 4.0 KiB correct 4.00x 4.00x\n"))
      << pool.out;

  const Outcome softmax = autotune({"explain", "softmax_xent mb64 classes10", "--tune-cache", file.string()});
  ASSERT_EQ(softmax.status, 0) << softmax.err;
  EXPECT_TRUE(contains(softmax.out, "softmax_fused: applicable")) << softmax.out;
  EXPECT_TRUE(contains(softmax.out, "softmax_five_pass: applicable")) << softmax.out;
  EXPECT_TRUE(contains(softmax.out, "not in the cache")) << softmax.out;

  const Outcome bad = autotune({"explain", "pool max fwd mb64"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_TRUE(contains(bad.err, "bad pool key 'pool max fwd mb64': field 'c' is missing")) << bad.err;
}

// ---- merge ----

TEST_F(AutotuneApp, MergeKeepsTheBetterMeasuredEntryAndReportsWhoWon) {
  TuningCache a, b;
  a.put(here_.id, here_.fields, tuned_3x3(/*runs=*/5));
  TuningEntry b_3x3 = tuned_3x3(/*runs=*/20);  // more runs: B's wins
  b_3x3.solver = "im2col_gemm";
  b_3x3.config = TuneConfig{{{"chunk", 1}}};
  b.put(here_.id, here_.fields, b_3x3);
  a.put(here_.id, here_.fields, entry(kKey5x5, {candidate("im2col_gemm", 1, 9)}));  // A's wins
  b.put(here_.id, here_.fields, entry(kKey5x5, {candidate("direct", 1, 3)}));
  b.put("cpu-other", kOtherFields, entry(kKey5x5, {candidate("im2col_gemm", 2, 4)}));
  DeviceThresholds ta, tb;
  ta.mec_t = 64;
  tb.mec_t = 128;
  a.set_thresholds(here_.id, here_.fields, ta);
  b.set_thresholds(here_.id, here_.fields, tb);
  const fs::path a_file = save(a, "a.yaml"), b_file = save(b, "b.yaml"), c_file = path("c.yaml");

  const Outcome run = autotune({"merge", a_file.string(), b_file.string(), "-o", c_file.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  const TuningCache c = load(c_file);
  EXPECT_EQ(c, merge(a, b));
  EXPECT_EQ(c.find(here_.id, kKey3x3)->solver, "im2col_gemm");
  EXPECT_EQ(c.find(here_.id, kKey5x5)->solver, "im2col_gemm");
  EXPECT_NE(c.find("cpu-other", kKey5x5), nullptr);
  EXPECT_EQ(c.thresholds(here_.id).mec_t, 64);
  EXPECT_TRUE(contains(run.out, "A " + a_file.string() + ": 1 device(s), 2 entries")) << run.out;
  EXPECT_TRUE(contains(run.out, "B " + b_file.string() + ": 2 device(s), 3 entries")) << run.out;
  EXPECT_TRUE(contains(run.out, "conflicts resolved: 2 (A won 1, B won 1)")) << run.out;
  EXPECT_TRUE(contains(run.out, kKey3x3 + ": kept B (20 runs")) << run.out;
  EXPECT_TRUE(contains(run.out, kKey5x5 + ": kept A (9 runs")) << run.out;
  EXPECT_TRUE(contains(run.out, "1 threshold(s) differ; kept A's (mec_t 64)")) << run.out;
  EXPECT_TRUE(contains(run.out, "wrote " + c_file.string() + ": 2 device(s), 3 entries"))
      << run.out;
}

TEST_F(AutotuneApp, MergeWithEqualRunsPrefersTheNewerDate) {
  TuningCache a, b;
  a.put(here_.id, here_.fields, tuned_3x3(10, "2026-01-01T00:00:00Z"));
  TuningEntry newer = tuned_3x3(10, "2026-03-01T00:00:00Z");
  newer.solver = "direct";
  newer.config = {};
  b.put(here_.id, here_.fields, newer);
  const fs::path c_file = path("c.yaml");
  const Outcome run = autotune({"merge", save(a, "a.yaml").string(), save(b, "b.yaml").string(),
                                "--output", c_file.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(load(c_file).find(here_.id, kKey3x3)->solver, "direct");
  EXPECT_TRUE(contains(run.out, "(A won 0, B won 1)")) << run.out;
}

TEST_F(AutotuneApp, MergeFailsOnAMissingOrCorruptInputWithoutWriting) {
  TuningCache a;
  a.put(here_.id, here_.fields, tuned_3x3());
  const fs::path a_file = save(a, "a.yaml"), c_file = path("c.yaml");
  const Outcome missing =
      autotune({"merge", a_file.string(), path("b.yaml").string(), "-o", c_file.string()});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(contains(missing.err, path("b.yaml").string())) << missing.err;
  EXPECT_FALSE(fs::exists(c_file));

  const fs::path corrupt = path("corrupt.yaml");
  std::ofstream(corrupt) << "not: [a, cache";
  const Outcome bad = autotune({"merge", corrupt.string(), a_file.string(), "-o", c_file.string()});
  EXPECT_EQ(bad.status, 1);
  EXPECT_TRUE(contains(bad.err, corrupt.string())) << bad.err;
  EXPECT_FALSE(fs::exists(c_file));
  EXPECT_TRUE(fs::exists(corrupt)) << "an input is never moved aside";
}

// ---- diff ----

TEST_F(AutotuneApp, DiffOfEqualCachesExitsZero) {
  TuningCache a;
  a.put(here_.id, here_.fields, tuned_3x3());
  const Outcome run = autotune({"diff", save(a, "a.yaml").string(), save(a, "b.yaml").string()});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_TRUE(contains(run.out, "the caches make the same decisions")) << run.out;

  // Timings alone (a re-profile that picked the same plans) are not a difference.
  TuningCache retimed;
  retimed.put(here_.id, here_.fields, tuned_3x3(/*runs=*/25));
  DeviceThresholds bandwidth_a, bandwidth_b;
  bandwidth_a.transform_gbps["NCHW>CHWN"] = 6.2;
  bandwidth_b.transform_gbps["NCHW>CHWN"] = 11.4;
  a.set_thresholds(here_.id, here_.fields, bandwidth_a);
  retimed.set_thresholds(here_.id, here_.fields, bandwidth_b);
  const Outcome retimed_run =
      autotune({"diff", save(a, "a2.yaml").string(), save(retimed, "c.yaml").string()});
  EXPECT_EQ(retimed_run.status, 0) << retimed_run.out;
  EXPECT_TRUE(contains(retimed_run.out, "transform bandwidths differ (measurements only"))
      << retimed_run.out;
}

TEST_F(AutotuneApp, DiffReportsEveryKindOfDifferenceAndExitsOne) {
  TuningCache a, b;
  a.put(here_.id, here_.fields, tuned_3x3());
  TuningEntry other_choice = tuned_3x3();
  other_choice.solver = "im2col_gemm";
  other_choice.config = TuneConfig{{{"chunk", 1}}};
  b.put(here_.id, here_.fields, other_choice);
  a.put(here_.id, here_.fields, entry(kKey5x5, {candidate("im2col_gemm", 0.5, 3)}));
  const std::string key_b = "conv bwd_data mb8 ic1 ih28 iw28 oc6 kh5 kw5 sh1 sw1 ph2 pw2 g1";
  b.put(here_.id, here_.fields, entry(key_b, {candidate("direct", 4, 3)}));
  DeviceThresholds t;
  t.nt = 32;
  b.set_thresholds(here_.id, here_.fields, t);
  b.put("cpu-other", kOtherFields, entry(kKey5x5, {candidate("im2col_gemm", 2, 4)}));

  const Outcome run = autotune({"diff", save(a, "a.yaml").string(), save(b, "b.yaml").string()});
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_TRUE(contains(run.out, "device " + here_.id + ": 4 difference(s)")) << run.out;
  EXPECT_TRUE(contains(run.out, "only in A: " + kKey5x5 + ": im2col_gemm - NCHW (0.500 ms)"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "only in B: " + key_b + ": direct - NCHW (4.000 ms)")) << run.out;
  EXPECT_TRUE(contains(run.out, "different: " + kKey3x3 +
                                    "\n    A: winograd_f2x3 tiles=8 NCHW (1.500 ms)"
                                    "\n    B: im2col_gemm chunk=1 NCHW (3.000 ms)"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "thresholds differ:\n    A: not calibrated\n    B: nt 32"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "device cpu-other: only in B (1 entries)")) << run.out;
  EXPECT_TRUE(contains(run.out, "5 difference(s)")) << run.out;
}

TEST_F(AutotuneApp, DiffTroubleExitsTwo) {
  TuningCache a;
  a.put(here_.id, here_.fields, tuned_3x3());
  const Outcome run = autotune({"diff", save(a, "a.yaml").string(), path("gone.yaml").string()});
  EXPECT_EQ(run.status, 2);
  EXPECT_TRUE(contains(run.err, "no tuning cache at " + path("gone.yaml").string())) << run.err;
}

// ---- export, and the system cache under the user's ----

TEST_F(AutotuneApp, ExportWritesThisMachinesSectionAndNeverOverwritesUnasked) {
  TuningCache cache;
  cache.put(here_.id, here_.fields, tuned_3x3());
  cache.put(here_.id, here_.fields, entry(kKey5x5, {candidate("im2col_gemm", 0.25, 7)}));
  DeviceThresholds thresholds;
  thresholds.ct = 32;
  cache.set_thresholds(here_.id, here_.fields, thresholds);
  cache.put("cpu-other", kOtherFields, tuned_3x3());
  const fs::path user = save(cache, "user.yaml");
  const fs::path site = path("site") / "tuning.yaml";

  const Outcome run = autotune({"export", "--tune-cache", user.string(), "-o", site.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "wrote " + site.string() + ": 1 device, 2 entries")) << run.out;
  EXPECT_TRUE(contains(run.out, "device " + here_.id)) << run.out;
  const TuningCache written = load(site);
  ASSERT_EQ(written.devices().size(), 1u);
  EXPECT_EQ(written.devices().at(here_.id), cache.devices().at(here_.id));
  EXPECT_FALSE(fs::exists(site.string() + ".lock"));  // a file to ship, nothing beside it

  // An existing file is kept unless --force.
  const std::string bytes = read_text(site);
  const Outcome again = autotune({"export", "--tune-cache", user.string(), "--device",
                                  "cpu-other", "-o", site.string()});
  EXPECT_EQ(again.status, 1);
  EXPECT_TRUE(contains(again.err, site.string() + " exists; pass --force")) << again.err;
  EXPECT_EQ(read_text(site), bytes);
  const Outcome forced = autotune({"export", "--tune-cache", user.string(), "--device",
                                   "cpu-other", "-o", site.string(), "--force"});
  ASSERT_EQ(forced.status, 0) << forced.err;
  EXPECT_EQ(load(site).devices().begin()->first, "cpu-other");
  EXPECT_EQ(load(user), cache);  // the source is only read
}

TEST_F(AutotuneApp, ExportRefusesTheUsersOwnCacheAMissingSectionAndNoOutput) {
  TuningCache cache;
  cache.put("cpu-other", kOtherFields, tuned_3x3());
  const fs::path user = save(cache, "user.yaml");
  const std::string bytes = read_text(user);
  const Outcome onto_user =
      autotune({"export", "--tune-cache", user.string(), "--device", "cpu-other", "-o",
                user.string(), "--force"});
  EXPECT_EQ(onto_user.status, 1);
  EXPECT_TRUE(contains(onto_user.err, "is the user's tuning cache itself")) << onto_user.err;
  EXPECT_EQ(read_text(user), bytes);

  const Outcome missing =
      autotune({"export", "--tune-cache", user.string(), "-o", path("site.yaml").string()});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(contains(missing.err, "has no section for " + here_.id)) << missing.err;
  EXPECT_TRUE(contains(missing.err, "cpu-other")) << missing.err;
  EXPECT_FALSE(fs::exists(path("site.yaml")));

  const Outcome no_output = autotune({"export", "--tune-cache", user.string()});
  EXPECT_EQ(no_output.status, 2);
  EXPECT_TRUE(contains(no_output.err, "-o FILE")) << no_output.err;
  const Outcome bad_device = autotune({"export", "--tune-cache", user.string(), "--device",
                                       "tpu", "-o", path("site.yaml").string()});
  EXPECT_EQ(bad_device.status, 2);
}

TEST_F(AutotuneApp, ShowAndExplainNameTheLayerOfEachEntryWhenASystemCacheIsInUse) {
  TuningCache user, system;
  user.put(here_.id, here_.fields, tuned_3x3());
  system.put(here_.id, here_.fields, entry(kKey3x3, {candidate("direct", 30.0, 99)}));
  system.put(here_.id, here_.fields, entry(kKey5x5, {candidate("im2col_gemm", 0.25, 7)}));
  system.put("cpu-other", kOtherFields, entry(kKey5x5, {candidate("direct", 2.0, 7)}));
  const fs::path user_file = save(user, "user.yaml"), site = save(system, "site.yaml");
  testing::ScopedEnv with_site("TUNECNN_SYSTEM_TUNE_CACHE", site.c_str());

  const Outcome run = autotune({"show", "--tune-cache", user_file.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "system cache " + site.string() + " (read-only")) << run.out;
  EXPECT_TRUE(has_row(run.out, "key solver config layout median ms candidates date host layer"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "entries: 2 (1 user, 1 system)")) << run.out;
  // The user's 3x3 entry hides the system's; the 5x5 comes from the system.
  EXPECT_TRUE(has_row(run.out, kKey3x3 + " winograd_f2x3 tiles=8 NCHW 1.500 4 "
                                         "2026-01-02T03:04:05Z testhost user\n"))
      << run.out;
  EXPECT_TRUE(has_row(run.out, kKey5x5 + " im2col_gemm - NCHW 0.250 1 2026-01-02T03:04:05Z "
                                         "testhost system\n"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "device cpu-other")) << run.out;

  // A file named on the command line is shown alone, without layers.
  const Outcome one_file = autotune({"show", user_file.string()});
  EXPECT_FALSE(contains(one_file.out, "layer")) << one_file.out;

  const Outcome explained = autotune({"explain", kKey5x5, "--tune-cache", user_file.string()});
  ASSERT_EQ(explained.status, 0) << explained.err;
  EXPECT_TRUE(contains(explained.out, "cached for this machine (" + here_.id +
                                          "), from the system cache " + site.string()))
      << explained.out;
}

TEST_F(AutotuneApp, ShowWithASystemCacheAndNoUserCacheYet) {
  TuningCache system;
  system.put(here_.id, here_.fields, tuned_3x3());
  const fs::path site = save(system, "site.yaml");
  testing::ScopedEnv with_site("TUNECNN_SYSTEM_TUNE_CACHE", site.c_str());
  const fs::path user = path("fresh.yaml");
  const Outcome run = autotune({"show", "--tune-cache", user.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.out, user.string() + ": no such file yet")) << run.out;
  EXPECT_TRUE(contains(run.out, "entries: 1 (0 user, 1 system)")) << run.out;
  EXPECT_FALSE(fs::exists(user));
}

TEST_F(AutotuneApp, CorruptSystemCacheIsAWarningAndShowGoesOn) {
  TuningCache user;
  user.put(here_.id, here_.fields, tuned_3x3());
  const fs::path user_file = save(user, "user.yaml");
  const fs::path site = path("site.yaml");
  std::ofstream(site) << "format: tunecnn-tuning-cache\nversion: 1\ndevices: [unclosed\n";
  testing::ScopedEnv with_site("TUNECNN_SYSTEM_TUNE_CACHE", site.c_str());
  const Outcome run = autotune({"show", "--tune-cache", user_file.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(contains(run.err, "warning: ignoring the system tuning cache: " + site.string()))
      << run.err;
  EXPECT_FALSE(contains(run.out, "layer")) << run.out;
  EXPECT_TRUE(contains(run.out, "entries: 1")) << run.out;
}

// The target end to end: `autotune profile` on one machine, `autotune export`, then a
// fresh user cache over that system cache ($TUNECNN_SYSTEM_TUNE_CACHE) profiles nothing, and
// what it writes goes to the user's file, not the system's.
TEST_F(AutotuneApp, ProfileOverAnExportedSystemCacheProfilesNothing) {
  const fs::path profiled = path("machine-a.yaml"), site = path("site.yaml");
  const std::vector<std::string> profile = {"profile", "--model", "lenet", "--batch", "8"};
  std::vector<std::string> first = profile;
  first.insert(first.end(), {"--tune-cache", profiled.string()});
  ASSERT_EQ(autotune(first).status, 0);
  const Outcome exported =
      autotune({"export", "--tune-cache", profiled.string(), "-o", site.string()});
  ASSERT_EQ(exported.status, 0) << exported.err;
  const std::size_t entries = load(site).devices().at(here_.id).entries.size();
  const std::string site_bytes = read_text(site);

  testing::ScopedEnv with_site("TUNECNN_SYSTEM_TUNE_CACHE", site.c_str());
  std::vector<std::string> fresh = profile;
  fresh.insert(fresh.end(), {"--tune-cache", path("machine-b.yaml").string()});
  const Outcome run = autotune(fresh);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(last_line(run.out), "profiled 0, reused " + std::to_string(entries) + ", seconds 0.00")
      << run.out;
  EXPECT_FALSE(contains(run.err, "[1/")) << run.err;
  EXPECT_EQ(read_text(site), site_bytes);
  EXPECT_FALSE(fs::exists(site.string() + ".lock"));
}

}  // namespace
}  // namespace tunecnn
