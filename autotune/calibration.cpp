#include "autotune/calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autotune/device_clock.h"
#include "core/init.h"
#include "core/rng.h"
#include "ops/conv/mec.h"
#include "ops/conv/registry.h"
#include "ops/conv/verify.h"
#include "ops/layout/transform.h"

namespace tunecnn {
namespace {

// Sweeps. Spatial sizes stay small so each point costs milliseconds and the whole calibration
// stays well under a minute on two cores; the thresholds are about channels and batch, not size.
constexpr int kMecSweepOw[] = {7, 14, 28, 56, 112};
constexpr int kMecBatch = 8, kMecChannels = 32;
// Li et al.'s sweeps over C (at a small batch) and over N (at a large C), per device. The N sweep
// runs at C = Ct clamped to [n_sweep_min_channels, the largest swept C]: a C the rule sends to the
// N test, and large, as in Li et al. The GPU's are larger: at the CPU's sizes each GPU call is a
// few microseconds of launch overhead that says nothing about layouts, and their Titan X's
// thresholds, (Ct, Nt) = (128, 64), sit at the top of the CPU's range.
struct LayoutSweep {
  std::vector<int> c_values, n_values;
  int c_sweep_batch, c_sweep_size;
  int n_sweep_size;  // N reaches the top of n_values at large C: keep the images small
  int n_sweep_min_channels;
  // "Never" for Ct and Nt: twice the largest swept value, so the rule gives what was measured for
  // every swept value (C < Ct always, N >= Nt never) while staying a plain int in the cache.
  int never_c() const { return 2 * c_values.back(); }
  int never_n() const { return 2 * n_values.back(); }
};

const LayoutSweep kCpuLayoutSweep{{1, 3, 8, 16, 32, 64, 128}, {1, 4, 8, 16, 32, 64, 128}, 8, 14, 8, 64};
const LayoutSweep kGpuLayoutSweep{
    {1, 3, 8, 16, 32, 64, 128, 256}, {1, 8, 16, 32, 64, 128, 256}, 32, 28, 14, 64};

const LayoutSweep& layout_sweep(Device device) {
  return device == Device::cpu ? kCpuLayoutSweep : kGpuLayoutSweep;
}

constexpr int kMinOutputChannels = 16;  // C = 1 with one output channel is no real layer
// About 4 MiB of f32 (LeNet's activations at batch 64 are 3 MiB, MobileNet-128's at batch 16 up
// to 8) with sizes that are no multiple of a tile, as real activations are not. A first tuned run
// pays for this calibration: at 8 MiB it was a fifth of LeNet's profiling pass, mostly the
// first touch of the tensors' pages.
const Shape kTransformShape = {16, 33, 44, 44};

constexpr Direction kDirections[] = {Direction::fwd, Direction::bwd_data, Direction::bwd_weights};

// ---- timing --------------------------------------------------------------------------------

// The conv tuner's timing policy (time_calls, declared in candidate_search.h), in seconds.
double median_seconds(const std::function<void()>& call, const TunerOptions& o) {
  return time_calls(call, o).median_ms / 1e3;
}

// Seconds of `a` and of `b`, each the least of kRounds medians taken in turn (a, b, a, b, ...):
// the machine may be shared, and a burst of load slows one round of one side, not every round.
constexpr int kRounds = 3;
std::pair<double, double> compare_seconds(const std::function<double()>& a,
                                          const std::function<double()>& b) {
  double best_a = a(), best_b = b();
  for (int round = 1; round < kRounds; ++round) {
    best_a = std::min(best_a, a());
    best_b = std::min(best_b, b());
  }
  return {best_a, best_b};
}

// The options with the device's clock: CUDA events on the GPU, where a call only queues kernels
// and the host's clock would time the queueing. A clock the caller set is kept.
CalibrationOptions with_device_clock(CalibrationOptions options) {
  if (!options.timing.clock && options.device != Device::cpu)
    options.timing.clock = device_clock(options.device);
  return options;
}

void report(const CalibrationOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

std::string ms_text(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f ms", seconds * 1e3);
  return buffer;
}

// ---- conv timing ---------------------------------------------------------------------------


// One problem's arguments in one layout on the problem's device, allocated once and shared by
// every solver timed on it.
class ConvBench {
 public:
  ConvBench(const ConvProblem& fwd, Layout layout) : fwd_(fwd) {
    Rng rng(1);
    args_ = conv_args_on(conv_args_in_layout(random_conv_args(fwd, rng), layout), fwd.device);
  }

  // Median seconds of one direction; run_conv's check, since the sweeps pick solvers by hand.
  double time(const ConvSolver& solver, const TuneConfig& config, Direction dir,
              const TunerOptions& timing) const {
    const ConvProblem p = fwd_.with_dir(dir);
    std::string why;
    TUNECNN_CHECK(solver.applicable(p, &why), "calibration: ", solver.name(), " cannot run ",
                  p.key(), ": ", why);
    const std::size_t bytes = solver.workspace_bytes(p, config);
    Storage storage(bytes, fwd_.device);
    const Workspace ws{bytes ? storage.data() : nullptr, bytes};
    return median_seconds([&] { solver.run(p, config, args_, ws); }, timing);
  }

 private:
  ConvProblem fwd_;
  ConvArgs args_;
};

const ConvSolver& solver_named(std::string_view name, Device device) {
  const ConvSolver* solver = find_conv_solver(name, device);
  TUNECNN_CHECK(solver != nullptr, "calibration needs ", to_string(device), " conv solver '", name,
                "'");
  return *solver;
}

ConvProblem three_by_three(int mb, int channels, int out_channels, int size,
                           Device device = Device::cpu) {
  ConvProblem p;
  p.device = device;
  p.mb = mb;
  p.ic = channels;
  p.oc = out_channels;
  p.ih = p.iw = size;
  p.kh = p.kw = 3;
  p.ph = p.pw = 1;
  return p;
}

// ---- MEC's T -------------------------------------------------------------------------------

// Solution A (T = ow) against Solution B (T = 0) forward, the chunk left at MEC's own fallback
// (the whole batch, the paper's Algorithm 2) so that only the choice of solution differs. The
// device's MEC in its own layout: NHWC on the CPU, NCHW on the GPU.
bool mec_solution_a_wins(int ow, const CalibrationOptions& options) {
  const ConvProblem p = three_by_three(kMecBatch, kMecChannels, kMecChannels, ow, options.device);
  const ConvSolver& mec = solver_named("mec", options.device);
  const TuneConfig a{{{"T", ow}}}, b{{{"T", 0}}};
  TUNECNN_CHECK(mec_uses_solution_a(p, a) && !mec_uses_solution_a(p, b),
                "calibration's MEC sweep does not separate the two solutions at ow ", ow);
  const ConvBench bench(p, mec.layouts(p).front());
  const auto [a_s, b_s] =
      compare_seconds([&] { return bench.time(mec, a, Direction::fwd, options.timing); },
                      [&] { return bench.time(mec, b, Direction::fwd, options.timing); });
  report(options, "calibrate mec_t: ow " + std::to_string(ow) + ": solution A " + ms_text(a_s) +
                      ", B " + ms_text(b_s));
  return a_s <= b_s;
}

// The largest swept ow where A is not slower; 0 (always B) when A never wins.
int calibrate_mec_t(const CalibrationOptions& options) {
  int t = 0;
  for (int ow : kMecSweepOw)
    if (mec_solution_a_wins(ow, options)) t = ow;
  return t;
}

// ---- Li et al.'s layout thresholds ---------------------------------------------------------

// fwd + bwd_data + bwd_weights with the CHWN solver Li et al. weigh against NCHW
// (chwn_threshold_solver: direct_chwn, cuda-convnet's direct convolution with the batch across
// the SIMD lanes on the CPU and across a warp on the GPU) in its first (default) config.
double chwn_seconds(const ConvProblem& p, const ConvBench& bench, const CalibrationOptions& options) {
  const ConvSolver& chwn = *chwn_threshold_solver(p.device);
  double total = 0;
  for (Direction dir : kDirections)
    total += bench.time(chwn, chwn.configs(p.with_dir(dir)).front(), dir, options.timing);
  return total;
}

// fwd + bwd_data + bwd_weights, each direction the fastest of the layout baselines in its first
// config (layout_baseline_solvers: on the CPU im2col+GEMM and Winograd where it applies; on the
// GPU cuDNN with its own heuristic's algorithm).
double nchw_seconds(const ConvProblem& p, const ConvBench& bench,
                    const CalibrationOptions& options) {
  double total = 0;
  for (Direction dir : kDirections) {
    const ConvProblem pd = p.with_dir(dir);
    double best = std::numeric_limits<double>::infinity();
    for (const ConvSolver* solver : layout_baseline_solvers(p.device))
      if (solver->applicable(pd, nullptr))
        best = std::min(best, bench.time(*solver, solver->configs(pd).front(), dir, options.timing));
    TUNECNN_CHECK(std::isfinite(best), "calibration: no NCHW solver runs ", pd.key());
    total += best;
  }
  return total;
}

bool chwn_wins(const ConvProblem& p, const CalibrationOptions& options) {
  const ConvBench in_chwn(p, Layout::CHWN), in_nchw(p, Layout::NCHW);
  const auto [chwn, nchw] = compare_seconds([&] { return chwn_seconds(p, in_chwn, options); },
                                            [&] { return nchw_seconds(p, in_nchw, options); });
  report(options, "calibrate layout: N " + std::to_string(p.mb) + " C " + std::to_string(p.ic) +
                      ": CHWN " + ms_text(chwn) + ", NCHW " + ms_text(nchw));
  return chwn < nchw;
}

// Ct: the smallest swept C where NCHW wins at a small batch. The sweep stops there, since later
// points cannot change a "smallest".
int calibrate_ct(const CalibrationOptions& options) {
  const LayoutSweep& sweep = layout_sweep(options.device);
  for (int c : sweep.c_values) {
    const ConvProblem p = three_by_three(sweep.c_sweep_batch, c, std::max(c, kMinOutputChannels),
                                         sweep.c_sweep_size, options.device);
    if (!chwn_wins(p, options)) return c;
  }
  return sweep.never_c();
}

// Nt: the smallest swept N where CHWN wins at a C the rule sends to the N test (C >= Ct).
int calibrate_nt(int ct, const CalibrationOptions& options) {
  const LayoutSweep& sweep = layout_sweep(options.device);
  const int c = std::clamp(ct, sweep.n_sweep_min_channels, sweep.c_values.back());
  for (int n : sweep.n_values)
    if (chwn_wins(three_by_three(n, c, c, sweep.n_sweep_size, options.device), options)) return n;
  return sweep.never_n();
}

// ---- transforms ----------------------------------------------------------------------------

// Rounds of one call per transform pair, after an untimed round that touches every page: a
// transform's time only grows with interference, so each pair keeps its fastest call, and a burst
// of load slows one round of one pair, not all. (The median of three calls of one pair at a time
// had given 13 to 86 GB/s for the same pair in three runs.)
constexpr int kTransformRounds = 5;

// GB/s counts the bytes read plus those written.
double gbps_of(std::size_t bytes, double seconds) {
  // A clock too coarse for one transform must not give an infinite bandwidth.
  return 2.0 * static_cast<double>(bytes) / std::max(seconds, 1e-9) / 1e9;
}

}  // namespace

DeviceThresholds calibrate_device(const CalibrationOptions& caller_options) {
  const CalibrationOptions options = with_device_clock(caller_options);
  DeviceThresholds t;
  t.mec_t = calibrate_mec_t(options);
  // Ct and Nt weigh the CHWN solver against NCHW ones: absent on a device without one (a build
  // whose GPU has no direct_chwn), where threshold_layout gives NCHW.
  if (chwn_threshold_solver(options.device) != nullptr) {
    t.ct = calibrate_ct(options);
    t.nt = calibrate_nt(*t.ct, options);
  }
  t.transform_gbps = calibrate_transforms(options);
  return t;
}

std::map<std::string, double> calibrate_transforms(const CalibrationOptions& caller_options) {
  const CalibrationOptions options = with_device_clock(caller_options);
  // One tensor per layout, each the source of two pairs and the destination of two. A transform
  // moves bytes whatever they hold, so a constant fill (at memset speed) touches the pages as
  // well as random values would, for a fraction of the cost: this runs in every first tuned run.
  std::map<Layout, Tensor> tensors;
  for (Layout layout : {Layout::NCHW, Layout::CHWN, Layout::NHWC}) {
    Tensor t = Tensor::empty(kTransformShape, DType::f32, options.device, layout);
    t.fill(0.5);
    tensors.emplace(layout, std::move(t));
  }
  const std::function<double()> clock = options.timing.clock ? options.timing.clock : device_clock(options.device);
  std::map<std::string, double> fastest_s;
  for (int round = -1; round < kTransformRounds; ++round)
    for (auto& [from, src] : tensors)
      for (auto& [to, dst] : tensors) {
        if (from == to) continue;
        const double start = clock();
        convert_layout_into(src, dst);
        const double seconds = clock() - start;
        const std::string key = transform_key(from, to);
        if (round >= 0 && (!fastest_s.count(key) || seconds < fastest_s[key])) fastest_s[key] = seconds;
      }
  std::map<std::string, double> gbps;
  for (const auto& [key, seconds] : fastest_s) {
    gbps[key] = gbps_of(tensors.at(Layout::NCHW).nbytes(), seconds);
    report(options, "calibrate transform " + key + ": " + ms_text(seconds) + ", " + std::to_string(gbps[key]) + " GB/s");
  }
  return gbps;
}

std::string transform_key(Layout from, Layout to) {
  return std::string(to_string(from)) + ">" + std::string(to_string(to));
}

// GB/s counts the bytes read plus those written, so one transform of `bytes` moves 2 * bytes.
// A zero bandwidth cannot price anything: treated as not calibrated.
std::optional<double> transform_ms(const DeviceThresholds& thresholds, Layout from, Layout to,
                                   std::size_t bytes) {
  if (from == to) return 0.0;
  const auto it = thresholds.transform_gbps.find(transform_key(from, to));
  if (it == thresholds.transform_gbps.end() || !(it->second > 0)) return std::nullopt;
  return 2.0 * static_cast<double>(bytes) / (it->second * 1e9) * 1e3;
}

}  // namespace tunecnn
