#include "apps/bench/conv_bench.h"

#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apps/bench/conv_options.h"
#include "apps/bench/conv_report.h"
#include "apps/bench/conv_vendor_report.h"
#include "apps/bench/pytorch_worker.h"
#include "apps/common/device_check.h"
#include "apps/training/progress.h"
#include "autotune/device_clock.h"
#include "autotune/fingerprint.h"
#include "core/allocator.h"
#include "core/atomic_file.h"
#include "core/init.h"
#include "core/threading.h"
#include "ops/conv/plan.h"
#include "ops/conv/registry.h"
#include "ops/layout/reference.h"

namespace tunecnn {
namespace {

constexpr const char* kSummary =
    "Times every applicable conv solver x config x direction on a named set of layers (ours and, "
    "in a build with oneDNN, each of oneDNN's implementations), side by "
    "side with PyTorch (a persistent /usr/bin/python3 child running apps/bench/conv_pytorch.py, "
    "fed one layer and direction at a time so both share the machine's noise). Reports the "
    "median time, GFLOP/s (2 * MACs / time), workspace and peak bytes, the fastest solver per "
    "layer x direction, PyTorch's time and forward peak memory, and our algorithms' best against "
    "oneDNN's. With --device cuda it times "
    "the GPU's solvers (cuDNN, im2col_gemm, MEC, direct_chwn, direct) with CUDA events instead "
    "and compares MEC's time and workspace with im2col_gemm's and cuDNN's, as the MEC paper does.";

// The NCHW tensors a direction reads, random, made once per layer x direction.
struct DirectionInputs {
  Tensor src, wei, diff_dst;
};

DirectionInputs make_inputs(const ConvProblem& p, Rng& rng) {
  DirectionInputs in;
  in.wei = Tensor::empty(p.wei_shape());
  uniform_fill(in.wei, -1, 1, rng);
  if (p.dir != Direction::bwd_data) {
    in.src = Tensor::empty(p.src_shape());
    uniform_fill(in.src, -1, 1, rng);
  }
  if (p.dir != Direction::fwd) {
    in.diff_dst = Tensor::empty(p.dst_shape());
    uniform_fill(in.diff_dst, -1, 1, rng);
  }
  return in;
}

// An input of the call in `layout` on the problem's device: a converted (untimed) copy.
Tensor input_in_layout(const Tensor& nchw, Layout layout, Device device) {
  return convert_layout_reference(nchw, layout).to(device);
}

// The call's tensors in `layout` on the problem's device: copies of the inputs, zeroed outputs.
// Weights stay [oc, ic/g, kh, kw] row-major in every layout (ops/conv/args.h).
ConvArgs args_in_layout(const ConvProblem& p, const DirectionInputs& in, Layout layout) {
  const Device device = p.device;
  ConvArgs args;
  args.wei = in.wei.clone().to(device);
  switch (p.dir) {
    case Direction::fwd:
      args.src = input_in_layout(in.src, layout, device);
      args.dst = Tensor::zeros(p.dst_shape(), DType::f32, device, layout);
      break;
    case Direction::bwd_data:
      args.diff_dst = input_in_layout(in.diff_dst, layout, device);
      args.diff_src = Tensor::zeros(p.src_shape(), DType::f32, device, layout);
      break;
    case Direction::bwd_weights:
      args.wei = Tensor();
      args.src = input_in_layout(in.src, layout, device);
      args.diff_dst = input_in_layout(in.diff_dst, layout, device);
      args.diff_wei = Tensor::zeros(p.wei_shape(), DType::f32, device);
      break;
  }
  return args;
}

// The layers with their problems stamped on the device the solvers run on.
std::vector<ConvLayer> layers_on(const std::string& set, int batch, Device device) {
  std::vector<ConvLayer> layers = conv_layer_set(set, batch);
  for (ConvLayer& layer : layers) layer.problem.device = device;
  return layers;
}

class ConvBench {
 public:
  ConvBench(ConvBenchOptions options, std::ostream& out)
      : options_(std::move(options)),
        out_(out),
        layers_(layers_on(options_.layers, options_.batch, options_.device)),
        clock_(device_clock(options_.device)),
        start_(std::chrono::steady_clock::now()) {}

  void run() {
    start_pytorch();
    print_header();
    print_table_header(out_);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      for (Direction dir : options_.directions) bench_direction(layers_[i], dir);
      write_csv();
      report_progress(i + 1);
    }
    print_summary(out_, rows_, layers_, options_.directions);
    print_onednn_comparison(out_, rows_, layers_, options_.directions);
    if (gpu()) print_mec_comparison(out_, rows_, layers_, options_.directions, solver_names());
    if (!options_.csv.empty()) out_ << "\nwrote " << options_.csv << "\n";
  }

 private:
  ConvBenchOptions options_;
  std::ostream& out_;
  std::vector<ConvLayer> layers_;
  std::vector<ConvBenchRow> rows_;
  std::unique_ptr<PytorchWorker> pytorch_;
  std::string pytorch_note_;
  std::set<std::string> noted_;  // reasons for not timing a solver, each printed once
  // Seconds as the device sees them: the steady clock on the CPU; on the GPU CUDA events on the
  // compute stream, since a call there only queues kernels and returns.
  std::function<double()> clock_;
  std::chrono::steady_clock::time_point start_;
  Rng rng_{1};

  bool gpu() const { return options_.device == Device::cuda; }

  // The device's registry in its order, for the comparison's columns.
  std::vector<std::string> solver_names() const {
    std::vector<std::string> names;
    for (const ConvSolver* solver : conv_solvers(options_.device)) names.emplace_back(solver->name());
    return names;
  }

  void start_pytorch() {
    if (gpu()) {
      pytorch_note_ = "off (--device cuda: conv_pytorch.py times PyTorch on the CPU)";
      return;
    }
    if (!options_.pytorch) {
      pytorch_note_ = "off (--pytorch off)";
      return;
    }
    try {
      pytorch_ = std::make_unique<PytorchWorker>(options_.python, options_.pytorch_script,
                                                 options_.threads);
      pytorch_note_ =
          pytorch_->description() + " via " + options_.python + " " + options_.pytorch_script;
    } catch (const std::exception& e) {
      pytorch_note_ = "off: " + user_message(e);
      std::cerr << "bench conv: PyTorch comparison is off: " << user_message(e) << "\n";
    }
  }

  void print_header() {
    std::string dirs;
    for (Direction dir : options_.directions)
      dirs += (dirs.empty() ? "" : ",") + std::string(to_string(dir));
    out_ << "# " << cpu_fingerprint().summary() << "\n";
    if (const std::optional<GpuFingerprint> card = gpu() ? gpu_fingerprint() : std::nullopt)
      out_ << "# gpu: " << card->summary() << "\n";
    out_ << "# bench conv: layers " << options_.layers << ", batch " << options_.batch
         << ", directions " << dirs << (gpu() ? ", device cuda" : "") << ", threads "
         << num_threads() << ", f32\n"
         << "# timing: per solver x config x direction, " << describe(options_.repeats)
         << (gpu() ? ", in CUDA events on the compute stream (the GPU's time for what a call "
                     "queues); arguments on the GPU"
                   : "")
         << ". Each solver runs in its first layout; converting the inputs into it is not "
            "timed.\n"
         << "# peak_MiB: our " << (gpu() ? "GPU " : "")
         << "allocator's peak during the calls over the call's own tensors: inputs, weights, "
            "output and workspace (block-rounded); "
         << (gpu() ? "cuBLAS's and cuDNN's own buffers" : "OpenBLAS's internal buffers")
         << " are not counted\n"
         << "# pytorch: " << pytorch_note_ << "; timed with the same rule on NCHW f32 tensors\n"
         << "# pytorch peak (fwd only): one forward in a fresh process after a warm-up forward: "
            "input + weight bytes + the growth of peak RSS (VmHWM, reset through "
            "/proc/self/clear_refs) during the call; counts touched 4 KiB pages, not bytes "
            "requested (see conv_pytorch.py)\n"
         << "# ratio = pytorch_ms / median_ms (> 1: tunecnn is faster); * marks the fastest "
            "solver of each layer x direction\n";
    if (options_.mec_memory) print_mec_memory(out_, layers_);
  }

  // Applicable solvers in registry order (or --solvers order); says once why others are not run.
  std::vector<const ConvSolver*> solvers_for(const ConvProblem& p) {
    std::vector<const ConvSolver*> chosen;
    auto skip = [&](std::string note) {
      if (noted_.insert(note).second) out_ << "#   not timed (noted once): " << note << "\n";
    };
    auto consider = [&](const ConvSolver* solver) {
      std::string why;
      if (!solver->applicable(p, &why))
        skip(std::string(solver->name()) + ": " + why);
      else if (options_.solvers.empty() && solver == &direct_conv_solver(Device::cpu) &&
               static_cast<double>(p.macs()) > options_.direct_max_mmacs * 1e6)
        skip("direct, the slow reference, on layers above --direct-max-mmacs " +
             std::to_string(static_cast<long long>(options_.direct_max_mmacs)) +
             " (name it in --solvers to time it)");
      else
        chosen.push_back(solver);
    };
    if (options_.solvers.empty())
      for (const ConvSolver* solver : conv_solvers(options_.device)) consider(solver);
    for (const std::string& name : options_.solvers)
      consider(find_conv_solver(name, options_.device));
    return chosen;
  }

  ConvBenchRow time_solver(const ConvLayer& layer, const ConvProblem& p, const ConvSolver& solver,
                           const TuneConfig& config, const DirectionInputs& inputs) {
    Allocator& allocator = allocator_for(options_.device);
    const Layout layout = solver.layouts(p).front();
    const std::size_t live_before = allocator.stats().current_bytes;
    const ConvArgs args = args_in_layout(p, inputs, layout);
    const ConvPlan plan{&solver, config};
    allocator.reset_peak();
    const TimingStats timing =
        time_until_settled([&] { run_conv(plan, p, args); }, options_.repeats, clock_);
    ConvBenchRow row;
    row.layer = layer.name;
    row.solver = solver.name();
    row.config = solver.describe(p, config);
    row.layout = layout;
    row.dir = p.dir;
    row.batch = p.mb;
    row.macs = p.macs();
    row.timing = timing;
    row.workspace_bytes = solver.workspace_bytes(p, config);
    row.peak_bytes = allocator.stats().peak_bytes - live_before;
    return row;
  }

  void bench_direction(const ConvLayer& layer, Direction dir) {
    const ConvProblem p = layer.problem.with_dir(dir);
    std::vector<ConvBenchRow> group;
    {
      const DirectionInputs inputs = make_inputs(p, rng_);
      for (const ConvSolver* solver : solvers_for(p))
        for (const TuneConfig& config : solver->configs(p))
          group.push_back(time_solver(layer, p, *solver, config, inputs));
    }
    add_pytorch(p, group);
    mark_fastest(group);
    print_table_group(out_, group);
    out_.flush();
    rows_.insert(rows_.end(), group.begin(), group.end());
  }

  // PyTorch's time for the same layer and direction, and for fwd its peak, on every row.
  void add_pytorch(const ConvProblem& p, std::vector<ConvBenchRow>& group) {
    if (group.empty()) return;
    const auto timing = ask_pytorch([&] { return pytorch_->time(p, options_.repeats); });
    std::optional<PytorchPeak> peak;
    if (timing && p.dir == Direction::fwd)
      peak = ask_pytorch([&] { return pytorch_->forward_peak(p); });
    for (ConvBenchRow& row : group) {
      if (timing) row.pytorch_ms = timing->median_ms;
      if (peak) row.pytorch_peak_bytes = peak->peak_bytes;
    }
  }

  // One request; a failed one is reported and skipped, a dead child turns PyTorch off.
  template <class Request>
  auto ask_pytorch(Request request) -> std::optional<decltype(request())> {
    if (!pytorch_) return std::nullopt;
    try {
      return request();
    } catch (const std::exception& e) {
      out_ << "#   pytorch: " << user_message(e) << "\n";
      if (!pytorch_->alive()) {
        out_ << "#   pytorch: the child process is gone; PyTorch is off for the rest of the run\n";
        pytorch_.reset();
      }
      return std::nullopt;
    }
  }

  void write_csv() {
    if (!options_.csv.empty()) write_file_atomically(options_.csv, conv_bench_csv(rows_));
  }

  void report_progress(std::size_t done) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::cerr << "bench conv: [" << done << "/" << layers_.size() << "] " << layers_[done - 1].name
              << " done, " << format_duration(elapsed) << " elapsed"
              << (options_.csv.empty() ? "" : ", csv updated") << "\n";
  }
};

}  // namespace

int bench_conv(int argc, const char* const* argv) {
  CommandLine cli("bench conv", kSummary);
  declare_conv_bench_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  ConvBenchOptions options = conv_bench_options(cli);
  require_device(options.device);
  set_num_threads(options.threads);
  ConvBench(std::move(options), std::cout).run();
  return 0;
}

}  // namespace tunecnn
