// The GPU side of the tools: `bench conv|pool --device cuda`, `autotune profile|calibrate --device
// cuda`, calibration on the GPU and pooling layouts per device. Parsing, the no-GPU errors, the
// CPU behaviour they must not change and the device-dependent rules run everywhere; what times
// or runs on a GPU skips without one (cuda_device_count() == 0).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "apps/autotune_cli/autotune_app.h"
#include "apps/bench/conv_bench.h"
#include "apps/bench/conv_options.h"
#include "apps/bench/conv_report.h"
#include "apps/bench/memory_bench.h"
#include "apps/bench/pool_bench.h"
#include "apps/common/device_check.h"
#include "autotune/calibration.h"
#include "autotune/fingerprint.h"
#include "autotune/tuning_cache.h"
#include "core/cuda_runtime.h"
#include "ops/conv/registry.h"
#include "ops/pool/pool2d.h"
#include "support/autotune_runs.h"
#include "support/capture.h"
#include "support/expect_error.h"
#include "support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

bool gpu_present() { return cuda_device_count() > 0; }

// What `--device cuda` must say on this machine when it has no GPU.
std::string no_gpu_message() {
  return cuda_built() ? "--device cuda: no usable GPU: " + cuda_unavailable_reason()
                      : "--device cuda: this build has no CUDA: rebuild with -DTUNECNN_CUDA=ON";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ConvBenchOptions parse_bench(std::vector<const char*> args) {
  args.insert(args.begin(), "conv");
  CommandLine cli("bench conv", "test");
  declare_conv_bench_options(cli);
  EXPECT_TRUE(cli.parse(static_cast<int>(args.size()), args.data()));
  return conv_bench_options(cli);
}

using Outcome = testing::AutotuneOutcome;

Outcome autotune(const std::vector<std::string>& args) { return testing::run_autotune_captured(args); }

CalibrationOptions quick_options(Device device, std::vector<std::string>* lines) {
  return testing::quick_calibration_options(device, lines);
}

// ---- everywhere -----------------------------------------------------------------------------

TEST(BenchConvDevice, DeviceSetsTheBatchAndTurnsPytorchOff) {
  const ConvBenchOptions cpu = parse_bench({});
  EXPECT_EQ(cpu.device, Device::cpu);
  EXPECT_EQ(cpu.batch, 8);
  EXPECT_TRUE(cpu.pytorch);
  const ConvBenchOptions gpu = parse_bench({"--device", "cuda"});
  EXPECT_EQ(gpu.device, Device::cuda);
  EXPECT_EQ(gpu.batch, 32);  // the MEC paper's GPU batch
  EXPECT_FALSE(gpu.pytorch);  // conv_pytorch.py times the CPU
  EXPECT_EQ(parse_bench({"--device", "cuda", "--batch-size", "16"}).batch, 16);
  EXPECT_EQ(parse_bench({"--batch", "4"}).batch, 4);
  EXPECT_EQ(parse_bench({"--batch", "4", "--batch-size", "4"}).batch, 4);
  testing::expect_error([] { parse_bench({"--batch", "4", "--batch-size", "8"}); },
                        {"--batch 4", "--batch-size 8", "disagree"});
  testing::expect_error([] { parse_bench({"--device", "tpu"}); }, {"--device", "tpu"});
}

TEST(BenchConvDevice, SolversAreCheckedAgainstTheDevicesRegistry) {
  if (!cuda_built()) GTEST_SKIP() << "no GPU solvers in a build without CUDA";
  EXPECT_EQ(parse_bench({"--device", "cuda", "--solvers", "cudnn,mec"}).solvers,
            (std::vector<std::string>{"cudnn", "mec"}));
  testing::expect_error([] { parse_bench({"--device", "cuda", "--solvers", "winograd_f2x3"}); },
                        {"unknown cuda solver 'winograd_f2x3'", "cudnn"});
  testing::expect_error([] { parse_bench({"--solvers", "cudnn"}); },
                        {"unknown cpu solver 'cudnn'"});
}

TEST(BenchConvDevice, WithoutAGpuCudaFailsBeforeAnyWork) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present";
  EXPECT_NO_THROW(require_device(Device::cpu));
  testing::expect_error([] { require_device(Device::cuda); }, {no_gpu_message()});
  testing::expect_error(
      [] {
        testing::run_capturing_stdout(bench_conv, "conv",
                                      {"--device", "cuda", "--layers", "lenet", "--repeats", "1"});
      },
      {no_gpu_message()});
}

TEST(BenchPoolDevice, WithoutAGpuCudaFailsBeforeAnyWork) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present";
  testing::expect_error(
      [] {
        testing::run_capturing_stdout(bench_pool, "pool", {"--device", "cuda", "--quick"});
      },
      {"timing on the GPU"});
}

TEST(BenchPoolDevice, AnUnknownDeviceOrALayoutTheGpuLacksIsRefused) {
  testing::expect_error(
      [] {
        testing::run_capturing_stdout(bench_pool, "pool", {"--device", "tpu", "--quick"});
      },
      {"--device", "tpu"});
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  testing::expect_error(
      [] {
        testing::run_capturing_stdout(bench_pool, "pool",
                                      {"--device", "cuda", "--quick", "--layouts", "NHWC"});
      },
      {"pool_tiled on cuda does not run NHWC"});
}

ConvBenchRow timed_row(const std::string& solver, const std::string& config, double ms,
                       std::size_t workspace_bytes) {
  ConvBenchRow r;
  r.layer = "cv1";
  r.solver = solver;
  r.config = config;
  r.dir = Direction::fwd;
  r.timing = {ms / 1e3, ms / 1e3, ms / 1e3, 3};
  r.workspace_bytes = workspace_bytes;
  return r;
}

TEST(BenchConvDevice, MecComparisonTakesEachSolversFastestConfig) {
  constexpr std::size_t kMiB = 1 << 20;
  const std::vector<ConvBenchRow> rows = {
      timed_row("cudnn", "algo=1", 4.0, 0), timed_row("cudnn", "algo=0", 2.0, 4 * kMiB),
      timed_row("im2col_gemm", "chunk=32", 8.0, 8 * kMiB),
      timed_row("mec", "chunk=32,T=0", 3.0, 1 * kMiB),
      timed_row("mec", "chunk=32,T=100", 1.0, 2 * kMiB)};
  const std::vector<ConvLayer> layers = {{"mec-paper", "cv1", {}}};
  std::ostringstream out;
  print_mec_comparison(out, rows, layers, {Direction::fwd, Direction::bwd_data},
                       {"cudnn", "im2col_gemm", "mec", "direct"});
  std::string squeezed;  // columns compared with single spaces
  for (char c : out.str())
    if (c != ' ' || squeezed.empty() || squeezed.back() != ' ') squeezed += c;
  EXPECT_TRUE(contains(squeezed, "layer direction cudnn_ms cudnn_MiB im2col_gemm_ms im2col_gemm_MiB "
                                 "mec_ms mec_MiB direct_ms direct_MiB ms mec/im2col_gemm "
                                 "MiB mec/im2col_gemm ms mec/cudnn MiB mec/cudnn mec_config"))
      << out.str();
  // cuDNN's fastest is algo=0 (2 ms, 4 MiB); MEC's is T=100 (1 ms, 2 MiB); direct was not timed.
  EXPECT_TRUE(contains(squeezed, "cv1 fwd 2.000 4.00 8.000 8.00 1.000 2.00 - - 0.12 0.25 0.50 0.50 "
                                 "mec chunk=32,T=100\n"))
      << out.str();
  EXPECT_TRUE(contains(squeezed, "cv1 bwd_data - - - - - - - - - - - - -\n")) << out.str();
}

TEST(AutotuneDevice, HelpNamesTheDeviceOption) {
  for (const std::string sub : {"profile", "calibrate"}) {
    const Outcome help = autotune({sub, "--help"});
    EXPECT_EQ(help.status, 0);
    EXPECT_TRUE(contains(help.out, "--device")) << sub << ": " << help.out;
  }
}

TEST(AutotuneDevice, AnUnknownDeviceIsAUsageError) {
  for (const std::string sub : {"profile", "calibrate"}) {
    const Outcome run = autotune({sub, "--device", "tpu"});
    EXPECT_EQ(run.status, 2) << sub;
    EXPECT_TRUE(contains(run.err, "--device: unknown device 'tpu'")) << sub << ": " << run.err;
  }
}

TEST(AutotuneDevice, WithoutAGpuProfileAndCalibrateFailBeforeAnyWork) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present";
  testing::TempDir dir;
  const fs::path file = dir.path() / "tuning.yaml";
  for (const std::string sub : {"profile", "calibrate"}) {
    const Outcome run = autotune({sub, "--device", "cuda", "--tune-cache", file.string()});
    EXPECT_EQ(run.status, 1) << sub;
    EXPECT_TRUE(contains(run.err, no_gpu_message())) << sub << ": " << run.err;
    EXPECT_EQ(run.out, "") << sub;  // nothing profiled or calibrated, nothing announced
    EXPECT_FALSE(fs::exists(file)) << sub;
  }
}

TEST(AutotuneDevice, FingerprintNamesTheGpuOrSaysWhyThereIsNone) {
  const Outcome any = autotune({"fingerprint"});
  ASSERT_EQ(any.status, 0) << any.err;
  EXPECT_TRUE(contains(any.out, "cpu " + device_identity(Device::cpu).id)) << any.out;
  const Outcome gpu = autotune({"fingerprint", "--device", "cuda"});
  if (!gpu_present()) {
    EXPECT_TRUE(contains(any.err, "no GPU: " + cuda_unavailable_reason())) << any.err;
    EXPECT_EQ(gpu.status, 1);
    EXPECT_TRUE(contains(gpu.err, no_gpu_message())) << gpu.err;
    return;
  }
  ASSERT_EQ(gpu.status, 0) << gpu.err;
  const DeviceIdentity card = device_identity(Device::cuda);
  EXPECT_TRUE(contains(gpu.out, "gpu " + card.id + "\n")) << gpu.out;
  EXPECT_TRUE(contains(gpu.out, "  name: " + card.fields.at("name") + "\n")) << gpu.out;
  EXPECT_TRUE(contains(gpu.out, "  cudnn: " + card.fields.at("cudnn") + "\n")) << gpu.out;
}

TEST(CalibrationDevice, TransformsOnTheCpuAreUnchanged) {
  std::vector<std::string> lines;
  const auto gbps = calibrate_transforms(quick_options(Device::cpu, &lines));
  EXPECT_EQ(gbps.size(), 6u);
  for (const auto& [pair, value] : gbps) EXPECT_TRUE(std::isfinite(value) && value > 0) << pair;
  EXPECT_EQ(lines.size(), 6u);
}

TEST(CalibrationDevice, WithoutAGpuCalibratingItIsAnError) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present";
  std::vector<std::string> lines;
  testing::expect_error([&] { calibrate_transforms(quick_options(Device::cuda, &lines)); },
                        {"GPU"});
  testing::expect_error([&] { calibrate_device(quick_options(Device::cuda, &lines)); }, {"GPU"});
  EXPECT_TRUE(lines.empty());
}

// The GPU's direct_chwn (CUDA builds) lets its thresholds send layers to CHWN; a build without
// one runs every GPU layer NCHW whatever the thresholds say.
bool gpu_has_chwn_conv() { return find_conv_solver("direct_chwn", Device::cuda) != nullptr; }

TEST(CalibrationDevice, GpuLayersFollowTheThresholdsOnlyWithAGpuChwnSolver) {
  ConvProblem p;
  p.mb = 64, p.ic = 3, p.oc = 16, p.ih = p.iw = 12, p.kh = p.kw = 3, p.ph = p.pw = 1;
  DeviceThresholds t;
  t.ct = 16;  // C 3 < Ct: CHWN
  t.nt = 128;
  EXPECT_EQ(threshold_layout(p, t), Layout::CHWN);
  p.device = Device::cuda;
  EXPECT_EQ(gpu_has_chwn_conv(), cuda_built());  // direct_chwn.cu
  EXPECT_EQ(threshold_layout(p, t), gpu_has_chwn_conv() ? Layout::CHWN : Layout::NCHW);
  p.ic = 32;  // C >= Ct and N < Nt: NCHW on either device
  EXPECT_EQ(threshold_layout(p, t), Layout::NCHW);
}

// What the GPU's solvers declare for the untuned plan (UntunedRoles): its NCHW chain is cuDNN,
// then im2col+GEMM, then MEC (NCHW on the GPU); the layout calibration weighs direct_chwn against
// cuDNN; nothing is a low-memory fallback, since every GPU solver but direct_chwn runs NCHW.
TEST(CalibrationDevice, GpuUntunedRolesComeFromTheSolvers) {
  if (!cuda_built()) GTEST_SKIP() << "a build without CUDA has no GPU conv solvers";
  const auto names_of = [](const std::vector<const ConvSolver*>& solvers) {
    std::string out;
    for (const ConvSolver* solver : solvers) out += (out.empty() ? "" : ",") + std::string(solver->name());
    return out;
  };
  EXPECT_EQ(names_of(untuned_nchw_chain(Device::cuda)), "cudnn,im2col_gemm,mec");
  EXPECT_EQ(names_of(layout_baseline_solvers(Device::cuda)), "cudnn");
  ASSERT_NE(chwn_threshold_solver(Device::cuda), nullptr);
  EXPECT_EQ(chwn_threshold_solver(Device::cuda)->name(), "direct_chwn");
  for (const ConvSolver* solver : conv_solvers(Device::cuda))
    EXPECT_FALSE(solver->untuned_roles().low_memory) << solver->name();
}

TEST(PoolLayoutsByDevice, GpuPoolingTakesNchwAndChwn) {
  const MaxPool2d pool(2, 2);
  const Shape input = {8, 16, 12, 12};
  const std::vector<Layout> cpu = pool.input_layouts(input);
  EXPECT_EQ(cpu, pool.input_layouts(input, Device::cpu));
  EXPECT_GT(cpu.size(), 1u);  // pool_tiled runs every layout on the CPU
  const std::vector<Layout> gpu = pool.input_layouts(input, Device::cuda);
  if (cuda_built())
    EXPECT_EQ(gpu, (std::vector<Layout>{Layout::NCHW, Layout::CHWN}));  // pool_tiled's
  else
    EXPECT_TRUE(gpu.empty()) << "a build without CUDA has no GPU pool solver";
}

// ---- on a GPU -------------------------------------------------------------------------------

// The CSV's solver column (the second) of every row, per direction (the third).
std::map<std::string, std::set<std::string>> solvers_by_direction(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  std::map<std::string, std::set<std::string>> out;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string layer, solver, dir;
    std::getline(fields, layer, ',');
    std::getline(fields, solver, ',');
    std::getline(fields, dir, ',');
    out[dir].insert(solver);
  }
  return out;
}

TEST(BenchConvOnGpu, OneLayerGivesARowPerSolverAndTheMecComparison) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  testing::TempDir dir;
  const std::string csv = (dir.path() / "conv.csv").string();
  std::string out;
  const int rc = testing::run_capturing_stdout(
      bench_conv, "conv",
      {"--device", "cuda", "--layers", "lenet", "--batch", "4", "--direction", "all",
       "--repeats", "2", "--warmup", "0", "--csv", csv.c_str()},
      &out);
  ASSERT_EQ(rc, 0) << out;
  const auto solvers = solvers_by_direction(csv);
  ASSERT_EQ(solvers.size(), 3u) << out;
  for (const auto& [dir_name, names] : solvers)
    EXPECT_EQ(names,
              (std::set<std::string>{"cudnn", "im2col_gemm", "mec", "direct_chwn", "direct"}))
        << "bench conv --device cuda, direction " << dir_name << ":\n"
        << out;
  EXPECT_TRUE(contains(out, "device cuda")) << out;
  EXPECT_TRUE(contains(out, "MEC against im2col_gemm and cuDNN")) << out;
  EXPECT_TRUE(contains(out, "ms mec/im2col_gemm")) << out;
  EXPECT_FALSE(contains(out, "\nconv1    fwd           pytorch")) << "no PyTorch on the GPU";
}

// Li et al.'s Fig. 6 in small: coarsening 1 and the best factor, NCHW and CHWN, on the GPU.
TEST(BenchPoolOnGpu, QuickRunTimesCoarseningOneAndTheBestFactorInNchwAndChwn) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  std::string out;
  const int rc =
      testing::run_capturing_stdout(bench_pool, "pool", {"--device", "cuda", "--quick"}, &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(contains(out, "# gpu: ")) << out;
  EXPECT_TRUE(contains(out, "device cuda")) << out;
  for (const char* row :
       {"NCHW   fwd  max  pool_direct", "NCHW   fwd  max  pool_tiled   fx=1 ",
        "CHWN   fwd  max  pool_tiled   fx=1 ", "CHWN   bwd  max  pool_tiled   tuned fx="})
    EXPECT_TRUE(contains(out, row)) << row << " missing in:\n" << out;
  EXPECT_FALSE(contains(out, "NHWC")) << "no GPU solver runs NHWC:\n" << out;
}

// bench memory --device cuda: the GPU allocator's peak of a tuned step by use, and the peak
// predicted before it (the same to the byte: nothing but the batch differs). Without a GPU, an
// error before anything is measured.
TEST(BenchMemoryOnGpu, TheGpuAllocatorsPeakAgainstThePrediction) {
  if (!gpu_present()) {
    testing::expect_error(
        [] { testing::run_capturing_stdout(bench_memory, "memory", {"--device", "cuda", "--pytorch", "off"}); },
        {no_gpu_message()});
    return;
  }
  testing::TempDir dir;
  const std::string cache = (dir.path() / "tuning.yaml").string();
  std::string out;
  const int rc = testing::run_capturing_stdout(
      bench_memory, "memory",
      {"--device", "cuda", "--model", "lenet", "--batch-size", "8", "--steps", "1", "--tune", "cached",
       "--tune-cache", cache.c_str()},
      &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(contains(out, "# gpu: ")) << out;
  EXPECT_TRUE(contains(out, "at the GPU allocator's peak")) << out;
  EXPECT_FALSE(contains(out, "resident set")) << "the host's resident set is not the GPU's memory:\n" << out;
  const std::size_t line = out.find("result model=lenet batch=8 peak_mb=");
  ASSERT_NE(line, std::string::npos) << out;
  double peak = 0, predicted = 0;
  ASSERT_EQ(std::sscanf(out.c_str() + line, "result model=lenet batch=8 peak_mb=%lf", &peak), 1) << out;
  const std::size_t at = out.find("predicted_peak_mb=", line);
  ASSERT_NE(at, std::string::npos) << out;
  ASSERT_EQ(std::sscanf(out.c_str() + at, "predicted_peak_mb=%lf", &predicted), 1) << out;
  EXPECT_GT(peak, 0.0);
  EXPECT_EQ(predicted, peak);
  EXPECT_TRUE(contains(out, " device=cuda\n")) << out;
}

TEST(AutotuneOnGpu, ProfileLenetWritesTheGpuSection) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  testing::TempDir dir;
  const fs::path file = dir.path() / "tuning.yaml";
  const Outcome run = autotune({"profile", "--device", "cuda", "--model", "lenet", "--batch", "8",
                                "--tune-cache", file.string()});
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  const DeviceIdentity gpu = device_identity(Device::cuda);
  EXPECT_TRUE(contains(run.out, gpu.id)) << run.out;
  const TuningCache cache = load_tuning_cache(file).cache;
  ASSERT_EQ(cache.devices().count(gpu.id), 1u) << "no section " << gpu.id << " in " << file;
  const DeviceRecord& section = cache.devices().at(gpu.id);
  EXPECT_FALSE(section.entries.empty());
  // Pooling runs NCHW and CHWN on the GPU (pool_tiled); of LeNet's conv candidates direct_chwn
  // is the one in CHWN, every other NCHW (LeNet has no depthwise layer for depthwise_direct's NHWC).
  for (const auto& [key, entry] : section.entries) {
    const bool pool = key.rfind("pool ", 0) == 0;
    for (const CandidateResult& c : entry.candidates) {
      const std::string what = key + ": " + c.solver + " " + c.config.str() + " in " + std::string(to_string(c.layout));
      if (pool)
        EXPECT_TRUE(c.layout == Layout::NCHW || c.layout == Layout::CHWN) << what;
      else
        EXPECT_EQ(c.layout, c.solver == "direct_chwn" ? Layout::CHWN : Layout::NCHW) << what;
    }
  }
  // Every timed conv candidate is a GPU solver: the model was stamped on the GPU.
  for (const auto& [key, entry] : section.entries) {
    if (key.rfind("conv ", 0) != 0) continue;
    for (const CandidateResult& c : entry.candidates)
      EXPECT_NE(find_conv_solver(c.solver, Device::cuda), nullptr) << key << ": " << c.solver;
  }
  // The CPU's section, if any, gained nothing from a GPU profile.
  const DeviceIdentity cpu = device_identity(Device::cpu);
  if (cache.devices().count(cpu.id) == 1) {
    EXPECT_TRUE(cache.devices().at(cpu.id).entries.empty());
  }
}

TEST(CalibrationOnGpu, FiniteTAndEveryTransformPair) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  std::vector<std::string> lines;
  const DeviceThresholds t = calibrate_device(quick_options(Device::cuda, &lines));
  ASSERT_TRUE(t.mec_t.has_value());
  const std::vector<int> swept = {0, 7, 14, 28, 56, 112};
  EXPECT_NE(std::find(swept.begin(), swept.end(), *t.mec_t), swept.end()) << *t.mec_t;
  if (gpu_has_chwn_conv()) {
    // Swept C: 1 ... 256 (512: never); swept N: 1, 8 ... 256 (512: never).
    const std::vector<int> cs = {1, 3, 8, 16, 32, 64, 128, 256, 512}, ns = {1, 8, 16, 32, 64, 128, 256, 512};
    ASSERT_TRUE(t.ct.has_value() && t.nt.has_value());
    EXPECT_NE(std::find(cs.begin(), cs.end(), *t.ct), cs.end()) << *t.ct;
    EXPECT_NE(std::find(ns.begin(), ns.end(), *t.nt), ns.end()) << *t.nt;
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
      return line.rfind("calibrate layout: N ", 0) == 0;
    }));
  } else {
    EXPECT_FALSE(t.ct.has_value()) << "the GPU has no CHWN solver to weigh";
    EXPECT_FALSE(t.nt.has_value());
  }
  EXPECT_EQ(t.transform_gbps.size(), 6u);
  for (const auto& [pair, gbps] : t.transform_gbps)
    EXPECT_TRUE(std::isfinite(gbps) && gbps > 0) << "GPU transform " << pair << ": " << gbps;
  for (const std::string& line : lines) EXPECT_EQ(line.rfind("calibrate ", 0), 0u) << line;
}

TEST(CalibrationOnGpu, ThresholdPlansRunOnTheGpu) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  ConvProblem p;
  p.mb = 4, p.ic = 8, p.oc = 16, p.ih = p.iw = 12, p.kh = p.kw = 3, p.ph = p.pw = 1;
  p.device = Device::cuda;
  DeviceThresholds t;
  t.mec_t = 7;
  const ConvLayerPlan plan = threshold_plan(p, t, SIZE_MAX);
  EXPECT_EQ(plan.layout(), Layout::NCHW);  // no ct, nt: NCHW
  if (gpu_has_chwn_conv()) {
    DeviceThresholds small_c = t;
    small_c.ct = 16, small_c.nt = 128;  // C 8 < Ct: CHWN, direct_chwn in every direction
    const ConvLayerPlan chwn = threshold_plan(p, small_c, SIZE_MAX);
    EXPECT_EQ(chwn.layout(), Layout::CHWN);
    for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights})
      EXPECT_EQ(chwn.for_direction(dir).solver, find_conv_solver("direct_chwn", Device::cuda)) << to_string(dir);
  }
  const auto gpu_solvers = conv_solvers(Device::cuda);
  const auto on_gpu = [&](const ConvSolver* solver) {
    return std::find(gpu_solvers.begin(), gpu_solvers.end(), solver) != gpu_solvers.end();
  };
  for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights})
    EXPECT_TRUE(on_gpu(plan.for_direction(dir).solver))
        << to_string(dir) << ": " << plan.for_direction(dir).solver->name();
  // No workspace at all: each direction still finds a GPU solver (the direct reference at last).
  const ConvLayerPlan tight = threshold_plan(p, t, 0);
  for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
    const ConvPlan& chosen = tight.for_direction(dir);
    EXPECT_TRUE(on_gpu(chosen.solver)) << to_string(dir) << ": " << chosen.solver->name();
    EXPECT_EQ(chosen.solver->workspace_bytes(p.with_dir(dir), chosen.config), 0u)
        << to_string(dir) << ": " << chosen.solver->name() << " " << chosen.config.str();
  }
}

}  // namespace
}  // namespace tunecnn
