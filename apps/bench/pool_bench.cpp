// `bench pool`: the pooling layers of Li et al. (PAPERS.md section 2): LeNet's 2/2 pools, the
// CIFAR net's padded 3/2 pools and AlexNet's overlapped 3/2 pools. For each layer x layout x
// direction it times pool_direct (NCHW only), pool_tiled at coarsening 1 (fx=1,fy=1, the untuned
// default) and pool_tiled at the best config of an exhaustive sweep, side by side: interleaved
// rounds, one call of each candidate per round, medians. It reports ms, GB/s (bytes read +
// written), the speedup over coarsening 1 in the same layout and over NCHW coarsening 1.
// With --device cuda the same table comes from the GPU's solvers of those names (pool_tiled in NCHW
// and CHWN, configs fx=1,2,4,8): Li et al.'s Fig. 6, coarsening 1 against the best factor per
// layer and layout. Arguments then live on the GPU and calls are timed with CUDA events.
#include "apps/bench/pool_bench.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <utility>

#include "apps/bench/bench_device.h"
#include "autotune/device_clock.h"
#include "apps/bench/repeat_policy.h"
#include "apps/common/cli.h"
#include "autotune/fingerprint.h"
#include "core/init.h"
#include "core/threading.h"
#include "ops/layout/to_layout.h"
#include "ops/layout/transform.h"
#include "ops/pool/registry.h"

namespace tunecnn {
namespace {

constexpr const char* kSummary =
    "Times pooling on the papers' pools: pool_direct (NCHW), pool_tiled at coarsening 1 "
    "(fx=1,fy=1), pool_tiled at the best config of an exhaustive sweep and, in a build with oneDNN, "
    "pool_onednn (NCHW, NHWC), in each layout, side by "
    "side in interleaved rounds. Reports median ms, GB/s (bytes read + written) and speedups. "
    "--device cuda times the GPU's solvers of those names (Li et al.'s Fig. 6).";

struct PoolLayer {
  std::string name;
  int c, hw, k, s, p, batch;
};

const std::vector<PoolLayer> kLayers = {
    {"lenet1", 16, 28, 2, 2, 0, 128},   {"lenet2", 16, 10, 2, 2, 0, 128},
    {"cifar1", 64, 24, 3, 2, 1, 128},   {"cifar2", 64, 12, 3, 2, 1, 128},
    {"alexnet1", 96, 55, 3, 2, 0, 64},  {"alexnet2", 256, 27, 3, 2, 0, 64},
    {"alexnet3", 256, 13, 3, 2, 0, 64},
};

PoolKind parse_kind(const std::string& name) {
  if (name == "max") return PoolKind::max;
  if (name == "avg") return PoolKind::avg;
  TUNECNN_FAIL("bench pool: unknown kind '", name, "' (max, avg)");
}

std::vector<Direction> parse_direction(const std::string& name) {
  if (name == "fwd") return {Direction::fwd};
  if (name == "bwd") return {Direction::bwd_data};
  if (name == "both") return {Direction::fwd, Direction::bwd_data};
  TUNECNN_FAIL("bench pool: unknown direction '", name, "' (fwd, bwd, both)");
}

// Bytes one call reads and writes.
double call_bytes(const PoolProblem& p) {
  const double src = static_cast<double>(p.mb) * p.c * p.ih * p.iw * dtype_size(p.dt);
  const double dst = static_cast<double>(p.mb) * p.c * p.oh() * p.ow() * dtype_size(p.dt);
  if (p.dir == Direction::fwd) return src + dst;
  return dst + src + (p.kind == PoolKind::max ? src : 0);  // diff_dst, diff_src (+ src)
}

struct Candidate {
  std::string layout_name, solver, config_label;
  const PoolSolver* solver_ptr;
  TuneConfig config;
  Layout layout;
  std::vector<double> times;
};

class PoolBench {
 public:
  PoolBench(const CommandLine& cli, Device device, std::function<double()> clock, bool layers_given,
            std::ostream& out)
      : out_(out),
        device_(device),
        clock_(std::move(clock)),
        direct_(find_pool_solver("pool_direct", device)),
        tiled_(find_pool_solver("pool_tiled", device)),
        onednn_(find_pool_solver("pool_onednn", device)) {
    TUNECNN_CHECK(direct_ != nullptr && tiled_ != nullptr,
                  "bench pool: no pool_direct and pool_tiled on ", to_string(device));
    quick_ = cli.has("quick");
    for (const std::string& name : split_commas(cli.get("layers"))) {
      if (name == "all") {
        layers_ = kLayers;
        continue;
      }
      bool found = false;
      for (const PoolLayer& l : kLayers) found = found || (l.name == name);
      TUNECNN_CHECK(found, "bench pool: unknown layer '", name,
                    "' (lenet1, lenet2, cifar1, cifar2, alexnet1, alexnet2, alexnet3, all)");
      for (const PoolLayer& l : kLayers)
        if (l.name == name) layers_.push_back(l);
    }
    if (quick_ && !layers_given) layers_ = {kLayers[1]};
    for (const std::string& name : split_commas(cli.get("kinds"))) kinds_.push_back(parse_kind(name));
    directions_ = parse_direction(cli.get("direction"));
    batch_ = cli.get_int("batch-size");
    TUNECNN_CHECK(!layers_.empty() && !kinds_.empty(), "bench pool: nothing to time");
    layouts_ = parse_layouts(cli.get("layouts"));
    rounds_ = quick_ ? 3 : cli.get_int("rounds");
    sweep_calls_ = quick_ ? 1 : cli.get_int("sweep-calls");
    TUNECNN_CHECK(!layouts_.empty(), "bench pool: nothing to time");
    TUNECNN_CHECK(rounds_ > 0 && sweep_calls_ > 0 && batch_ >= 0,
                  "bench pool: --rounds, --sweep-calls must be positive, --batch-size >= 0");
  }

  void run() {
    const std::string one = coarsening_one().str();
    out_ << "# " << cpu_fingerprint().summary() << "\n";
    print_gpu_fingerprint(out_, device_);
    out_ << "# bench pool: "
         << (gpu() ? "device cuda (CUDA events on the compute stream; "
                     "arguments on the GPU), "
                   : "")
         << "threads " << num_threads() << ", f32, " << rounds_
         << " interleaved rounds (one call of each candidate per round, after one warm-up round); "
            "tuned = the fastest config of an exhaustive sweep over pool_tiled's configs ("
         << sweep_calls_ << " call(s) each, median) in that layout\n"
         << "# GB/s: bytes read + written per call / median time; x_vs_1x1: speedup over "
            "pool_tiled "
         << one << " in the same layout; x_vs_nchw_1x1: over pool_tiled " << one << " in NCHW\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-9s %-6s %-4s %-4s %-12s %-16s %10s %8s %9s %14s\n",
                  "layer", "layout", "dir", "kind", "solver", "config", "median_ms", "GB/s",
                  "x_vs_1x1", "x_vs_nchw_1x1");
    out_ << line;
    for (const PoolLayer& layer : layers_)
      for (PoolKind kind : kinds_)
        for (Direction dir : directions_) bench_one(layer, kind, dir);
  }

 private:
  std::ostream& out_;
  Device device_;
  std::function<double()> clock_;  // seconds: the steady clock, or CUDA events on the GPU
  const PoolSolver* direct_;       // the device's pool_direct and pool_tiled
  const PoolSolver* tiled_;
  const PoolSolver* onednn_;       // oneDNN's pooling: in a CPU build with oneDNN, else nullptr
  bool quick_ = false;
  std::vector<PoolLayer> layers_;
  std::vector<Layout> layouts_;
  std::vector<PoolKind> kinds_;
  std::vector<Direction> directions_;
  int batch_ = 0, rounds_ = 15, sweep_calls_ = 3;
  Rng rng_{1};

  bool gpu() const { return device_ == Device::cuda; }

  // "all": every layout the device's pool_tiled runs; else a comma list of them.
  std::vector<Layout> parse_layouts(const std::string& text) const {
    const std::vector<Layout> runs =
        tiled_->layouts(problem_of(layers_.front(), kinds_.front(), directions_.front()));
    if (text == "all") return runs;
    std::vector<Layout> layouts;
    for (const std::string& name : split_commas(text)) {
      const Layout layout = parse_layout(name);
      TUNECNN_CHECK(contains_layout(runs, layout), "bench pool: pool_tiled on ", to_string(device_),
                    " does not run ", to_string(layout));
      layouts.push_back(layout);
    }
    return layouts;
  }

  // pool_tiled's untuned default, the baseline of the speedups.
  TuneConfig coarsening_one() const {
    return tiled_->configs(problem_of(layers_.front(), kinds_.front(), directions_.front()))
        .front();
  }

  // One call's time on the device's clock.
  double seconds_on_device(const std::function<void()>& call) const {
    const double start = clock_();
    call();
    return clock_() - start;
  }

  PoolProblem problem_of(const PoolLayer& l, PoolKind kind, Direction dir) const {
    PoolProblem p;
    p.device = device_;
    p.kind = kind, p.dir = dir;
    p.mb = batch_ > 0 ? batch_ : (quick_ ? 8 : l.batch);
    p.c = l.c, p.ih = p.iw = l.hw, p.kh = p.kw = l.k, p.sh = p.sw = l.s, p.ph = p.pw = l.p;
    return p;
  }

  void bench_one(const PoolLayer& layer, PoolKind kind, Direction dir) {
    const PoolProblem p = problem_of(layer, kind, dir);
    const bool fwd = dir == Direction::fwd;
    Tensor src = Tensor::empty(p.src_shape()), diff_dst = Tensor::empty(p.dst_shape());
    uniform_fill(src, -1, 1, rng_);
    uniform_fill(diff_dst, -1, 1, rng_);
    std::map<Layout, PoolArgs> args;
    for (Layout layout : layouts_) {
      PoolArgs& a = args[layout];
      if (fwd || kind == PoolKind::max) a.src = convert_layout(src, layout).to(device_);
      if (fwd) {
        a.dst = Tensor::zeros(p.dst_shape(), DType::f32, device_, layout);
      } else {
        a.diff_dst = convert_layout(diff_dst, layout).to(device_);
        a.diff_src = Tensor::zeros(p.src_shape(), DType::f32, device_, layout);
      }
    }
    std::vector<Candidate> candidates;
    const TuneConfig one = tiled_->configs(p).front();
    for (Layout layout : layouts_) {
      const std::string ln(to_string(layout));
      if (layout == Layout::NCHW)
        candidates.push_back({ln, "pool_direct", "-", direct_, TuneConfig{}, layout, {}});
      candidates.push_back({ln, "pool_tiled", one.str(), tiled_, one, layout, {}});
      const TuneConfig best = sweep(p, args.at(layout));
      candidates.push_back({ln, "pool_tiled", "tuned " + best.str(), tiled_, best, layout, {}});
      if (onednn_ && contains_layout(onednn_->layouts(p), layout))
        candidates.push_back({ln, "pool_onednn", "-", onednn_, TuneConfig{}, layout, {}});
    }
    for (int round = -1; round < rounds_; ++round)
      for (Candidate& c : candidates) {
        const double s =
            seconds_on_device([&] { c.solver_ptr->run(p, c.config, args.at(c.layout)); });
        if (round >= 0) c.times.push_back(s);
      }
    std::map<Layout, double> one_ms;
    for (const Candidate& c : candidates)
      if (c.solver_ptr == tiled_ && c.config == one) one_ms[c.layout] = 1e3 * median_of(c.times);
    const double bytes = call_bytes(p);
    const std::string dir_name = fwd ? "fwd" : "bwd";
    for (const Candidate& c : candidates) {
      const double ms = 1e3 * median_of(c.times);
      const double nchw = one_ms.count(Layout::NCHW) ? one_ms.at(Layout::NCHW) / ms : 0;
      char line[512];
      std::snprintf(line, sizeof line, "%-9s %-6s %-4s %-4s %-12s %-16s %10.3f %8.2f %9.2f %14s\n",
                    layer.name.c_str(), c.layout_name.c_str(), dir_name.c_str(),
                    std::string(to_string(kind)).c_str(), c.solver.c_str(),
                    c.config_label.c_str(), ms, bytes / (ms * 1e-3) / 1e9,
                    one_ms.at(c.layout) / ms,
                    nchw > 0 ? std::to_string(nchw).substr(0, 5).c_str() : "-");
      out_ << line;
    }
    out_.flush();
  }

  // The fastest of pool_tiled's configs in one layout: each timed sweep_calls_ times, median.
  TuneConfig sweep(const PoolProblem& p, const PoolArgs& args) const {
    TuneConfig best;
    double best_s = 0;
    for (const TuneConfig& config : tiled_->configs(p)) {
      tiled_->run(p, config, args);  // warm-up
      std::vector<double> times;
      for (int i = 0; i < sweep_calls_; ++i)
        times.push_back(seconds_on_device([&] { tiled_->run(p, config, args); }));
      const double s = median_of(times);
      if (best.values.empty() || s < best_s) best = config, best_s = s;
    }
    return best;
  }
};

}  // namespace

int bench_pool(int argc, const char* const* argv) {
  CommandLine cli("bench pool", kSummary);
  cli.option("layers", "all",
             "comma list of lenet1, lenet2 (28x28x16, 10x10x16, 2/2), cifar1, cifar2 (24x24x64, "
             "12x12x64, 3/2 pad 1), alexnet1, alexnet2, alexnet3 (55x55x96, 27x27x256, "
             "13x13x256, 3/2), or all");
  cli.option("batch-size", "0", "batch of every layer; 0: 128 for LeNet and CIFAR, 64 for AlexNet");
  cli.option("device", "cpu",
             "cpu, or cuda: the GPU's pool_direct and pool_tiled (NCHW, CHWN; coarsening factor "
             "fx=1,2,4,8) on the first NVIDIA GPU, arguments on the GPU, timed with CUDA events on "
             "the compute stream");
  cli.option("threads", "2", "CPU threads");
  cli.option("layouts", "all",
             "layouts to time pool_tiled in, a comma list; all: every layout it runs on the device "
             "(CPU: NCHW, CHWN, NHWC; GPU: NCHW, CHWN)");
  cli.option("kinds", "max", "comma list of max, avg");
  cli.option("direction", "both", "fwd, bwd or both");
  cli.option("rounds", "15", "interleaved timed rounds of the side-by-side comparison");
  cli.option("sweep-calls", "3", "timed calls per config in the sweep");
  cli.flag("quick", "one small layer (lenet2 at batch 8 unless --layers/--batch-size say "
                    "otherwise), 3 rounds, 1 sweep call: for the test suite");
  if (!cli.parse(argc, argv)) return 0;
  const Device device = parse_bench_device(cli.get("device"));
  std::function<double()> clock = device_clock(device);  // no GPU: an error before the table
  set_num_threads(cli.get_int("threads"));
  // --quick keeps --layers only when it was given explicitly.
  bool layers_given = false;
  for (int i = 1; i < argc; ++i) layers_given = layers_given || std::string(argv[i]) == "--layers";
  PoolBench(cli, device, std::move(clock), layers_given, std::cout).run();
  return 0;
}

}  // namespace tunecnn
