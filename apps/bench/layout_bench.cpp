// `bench layout`: the layout transforms (ops/layout/transform.h) in GB/s against memcpy of the
// same bytes, on the activations of Li et al.'s benchmark layers (PAPERS.md section 2). Li et
// al. judge their transform by the fraction of memory bandwidth it reaches (97.6%) and by its
// speedup over a naive 4-D transpose (6.5-7.5x); on a CPU the bandwidth a transform can reach is
// what memcpy reaches over the same buffers, so that is the yardstick here.
//
// For each layer x pair four things are timed side by side in interleaved rounds (so they share
// the machine's noise): convert_layout_into into a preallocated tensor, the naive reference
// (convert_layout_reference, whose destination comes from the caching allocator), one std::memcpy
// of the same bytes between the same buffers, and a TBB-parallel memcpy in chunks (the transform
// uses every thread, a single memcpy one). The transform is reported against the faster memcpy.
//
// With --device cuda the same on the GPU, timed with CUDA events: the tiled kernel (float2 for
// CHWN <-> NCHW when N >= 64), the naive one-thread-per-element kernel, and one device-to-device
// cudaMemcpy of the same bytes, the paper's yardstick (they reached 97.6% of it).
#include "apps/bench/layout_bench.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>

#include "apps/bench/repeat_policy.h"
#include "apps/common/cli.h"
#include "apps/bench/bench_device.h"
#include "autotune/device_clock.h"
#include "autotune/fingerprint.h"
#include "core/cuda_runtime.h"
#include "core/init.h"
#include "core/threading.h"
#include "models/conv_layers.h"
#include "ops/layout/reference.h"
#include "ops/layout/transform.h"

namespace tunecnn {
namespace {

constexpr const char* kSummary =
    "Times the layout transforms (convert_layout_into, preallocated destination) on the input "
    "activations of Li et al.'s layers CV1-CV12, side by side with the naive 4-D reference loop "
    "and with memcpy of the same bytes (one std::memcpy call and a TBB-parallel chunked one), in "
    "interleaved rounds. Reports medians, GB/s counting bytes read + written, the % of the "
    "faster memcpy's GB/s and the speedup over the naive transform. With --device cuda: the GPU's "
    "tiled and naive kernels against a device-to-device memcpy, timed with CUDA events.";

struct Activation {
  std::string name;
  Shape shape;  // logical N, C, H, W
};

// The inputs of Li et al.'s CV1-CV12 at their batch (PAPERS.md section 2: N, output channels,
// H=W, kernel, input channels, stride). models/conv_layers.txt has LeNet's and the CIFAR net's
// layers (CV1-CV4) but not ZFNet's or VGG's, so the list is written out here.
const std::vector<Activation>& li_paper_inputs() {
  static const std::vector<Activation> inputs = {
      {"cv1", {128, 1, 28, 28}},   {"cv2", {128, 16, 14, 14}},  {"cv3", {128, 3, 24, 24}},
      {"cv4", {128, 64, 12, 12}},  {"cv5", {64, 3, 224, 224}},  {"cv6", {64, 96, 55, 55}},
      {"cv7", {64, 256, 13, 13}},  {"cv8", {64, 384, 13, 13}},  {"cv9", {32, 3, 224, 224}},
      {"cv10", {32, 128, 56, 56}}, {"cv11", {32, 256, 28, 28}}, {"cv12", {32, 512, 14, 14}},
  };
  return inputs;
}

// "li-paper" (all of CV1-CV12), a comma list of their names ("cv1,cv6"), or a set of
// models/conv_layers.txt ("alexnet") whose inputs are taken at `batch`.
std::vector<Activation> activations_for(const std::string& layers, int batch) {
  if (layers == "li-paper") return li_paper_inputs();
  const auto names = conv_layer_set_names();
  if (std::find(names.begin(), names.end(), layers) != names.end()) {
    std::vector<Activation> out;
    for (const ConvLayer& layer : conv_layer_set(layers, batch))
      out.push_back({layers + "/" + layer.name, layer.problem.src_shape()});
    return out;
  }
  std::vector<Activation> out;
  for (const std::string& name : split_commas(layers)) {
    const auto& all = li_paper_inputs();
    const auto it = std::find_if(all.begin(), all.end(), [&](const Activation& a) { return a.name == name; });
    TUNECNN_CHECK(it != all.end(), "bench layout: unknown layer '", name,
                  "' (expected li-paper, cv1..cv12, or a set of conv_layers.txt)");
    out.push_back(*it);
  }
  TUNECNN_CHECK(!out.empty(), "bench layout: --layers names no layer");
  return out;
}

struct Pair {
  Layout from, to;
};

std::string pair_name(const Pair& p) {
  return std::string(to_string(p.from)) + "->" + std::string(to_string(p.to));
}

// "NCHW->CHWN,CHWN->NCHW" (case-insensitive; "-" or ">" also separate), or "all" for the six.
std::vector<Pair> parse_pairs(const std::string& text) {
  std::vector<Pair> pairs;
  const Layout all[] = {Layout::NCHW, Layout::CHWN, Layout::NHWC};
  if (text == "all") {
    for (Layout a : all)
      for (Layout b : all)
        if (a != b) pairs.push_back({a, b});
    return pairs;
  }
  for (std::string item : split_commas(text)) {
    std::transform(item.begin(), item.end(), item.begin(), [](unsigned char c) { return std::toupper(c); });
    const std::size_t cut = item.find_first_of("->");
    const std::size_t rest = item.find_first_not_of("->", cut);
    TUNECNN_CHECK(cut != std::string::npos && rest != std::string::npos,
                  "bench layout: bad pair '", item, "' (expected e.g. NCHW->CHWN)");
    const Pair p{parse_layout(item.substr(0, cut)), parse_layout(item.substr(rest))};
    TUNECNN_CHECK(p.from != p.to, "bench layout: pair '", item, "' converts nothing");
    pairs.push_back(p);
  }
  TUNECNN_CHECK(!pairs.empty(), "bench layout: --pairs names no pair");
  return pairs;
}

// One timed thing: its calls per round (fixed after the warm-up) and every call's time.
struct Contender {
  explicit Contender(std::function<void()> f) : fn(std::move(f)) {}
  std::function<void()> fn;
  int calls = 1;
  std::vector<double> times;
  double median() const { return median_of(times); }
};

// Seconds one call of `fn` took by `clock` (the device's: device_clock.h).
double seconds_by(const std::function<double()>& clock, const std::function<void()>& fn) {
  const double start = clock();
  fn();
  return clock() - start;
}

// Warm-up, then `rounds` rounds; each round runs every contender in turn, each `calls` times
// (enough for ~`round_s` a round, at most 20), timing each call on its own.
void time_interleaved(std::vector<Contender*> contenders, int rounds, double round_s,
                      const std::function<double()>& clock) {
  for (Contender* c : contenders) {
    c->fn();  // first touch of the destination pages and the allocator's block
    c->calls = std::clamp(static_cast<int>(round_s / std::max(seconds_by(clock, c->fn), 1e-7)), 1, 20);
  }
  for (int r = 0; r < rounds; ++r)
    for (Contender* c : contenders)
      for (int i = 0; i < c->calls; ++i) c->times.push_back(seconds_by(clock, c->fn));
}

void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t kChunk = 256 << 10;  // big enough to stream, small enough to balance
  const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks), [&](const tbb::blocked_range<std::size_t>& r) {
    const std::size_t begin = r.begin() * kChunk, end = std::min(bytes, r.end() * kChunk);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  });
}

struct Row {
  double ms, gbs, memcpy_ms, memcpy_gbs, naive_ms;
  const char* memcpy_kind;
};

Row row_of(const Contender& transform, const Contender& naive, const Contender& copy,
           const char* copy_kind, std::size_t bytes) {
  const double gb = 2.0 * static_cast<double>(bytes) / 1e9;  // read + written
  return {transform.median() * 1e3, gb / transform.median(), copy.median() * 1e3, gb / copy.median(),
          naive.median() * 1e3, copy_kind};
}

// A wrong transform would make the timing meaningless; one element-exact check, untimed.
void check_transform(const Tensor& src, Tensor& dst, const Activation& a, const Pair& pair) {
  convert_layout_into(src, dst);
  const Tensor got = dst.to(Device::cpu), want = convert_layout_reference(src.to(Device::cpu), pair.to);
  TUNECNN_CHECK(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()) == 0,
                "bench layout: convert_layout_into disagrees with the reference on ", a.name, " ",
                pair_name(pair), " (", to_string(src.device()), ")");
}

Row bench_on_cpu(const Activation& a, const Pair& pair, int rounds, double round_s, Rng& rng) {
  Tensor src = Tensor::empty(a.shape, DType::f32, Device::cpu, pair.from);
  uniform_fill(src, -1, 1, rng);
  Tensor dst = Tensor::empty(a.shape, DType::f32, Device::cpu, pair.to);
  const std::size_t bytes = src.nbytes();
  Contender transform{[&] { convert_layout_into(src, dst); }};
  Contender naive{[&] { convert_layout_reference(src, pair.to); }};
  Contender copy1{[&] { std::memcpy(dst.raw_data(), src.raw_data(), bytes); }};
  Contender copyp{[&] { parallel_memcpy(dst.raw_data(), src.raw_data(), bytes); }};
  time_interleaved({&transform, &naive, &copy1, &copyp}, rounds, round_s, device_clock(Device::cpu));
  check_transform(src, dst, a, pair);
  const bool parallel_wins = copyp.median() < copy1.median();
  return row_of(transform, naive, parallel_wins ? copyp : copy1, parallel_wins ? "tbb" : "single", bytes);
}

// The GPU's tiled kernel, its naive kernel into a second preallocated tensor, and one
// device-to-device memcpy, under CUDA events.
Row bench_on_gpu(const Activation& a, const Pair& pair, int rounds, double round_s, Rng& rng,
                 const std::function<double()>& clock) {
  Tensor host = Tensor::empty(a.shape, DType::f32, Device::cpu, pair.from);
  uniform_fill(host, -1, 1, rng);
  const Tensor src = host.to(Device::cuda);
  Tensor dst = Tensor::empty(a.shape, DType::f32, Device::cuda, pair.to);
  Tensor naive_dst = Tensor::empty(a.shape, DType::f32, Device::cuda, pair.to);
  const std::size_t bytes = src.nbytes();
  Contender transform{[&] { convert_layout_into(src, dst); }};
  Contender naive{[&] { convert_layout_naive_into(src, naive_dst); }};
  Contender copy{[&] { copy_bytes(dst.raw_data(), Device::cuda, src.raw_data(), Device::cuda, bytes); }};
  time_interleaved({&transform, &naive, &copy}, rounds, round_s, clock);
  check_transform(src, dst, a, pair);
  return row_of(transform, naive, copy, "d2d", bytes);
}

}  // namespace

int bench_layout(int argc, const char* const* argv) {
  CommandLine cli("bench layout", kSummary);
  cli.option("layers", "li-paper",
             "li-paper (CV1-CV12 inputs at their N), a comma list of them (cv1,cv6), or a set of "
             "models/conv_layers.txt (lenet, cifar, alexnet, mec-paper, mobilenet) at --batch");
  cli.option("batch", "32", "N for a conv_layers.txt set (li-paper layers keep their own N)");
  cli.option("pairs", "NCHW->CHWN,CHWN->NCHW,NCHW->NHWC,NHWC->NCHW",
             "FROM->TO pairs, comma-separated, or all (the six)");
  cli.option("threads", "2", "CPU threads (transform, parallel memcpy)");
  cli.option("rounds", "5", "interleaved rounds over transform, naive and the two memcpys");
  cli.option("round-ms", "20", "target time of one contender in one round (1-20 calls)");
  cli.option("device", "cpu", "cpu, or cuda: the GPU's kernels against a device-to-device memcpy");
  cli.flag("quick", "a few seconds' smoke run for the test suite: cv1,cv3, 2 rounds, 2 ms");
  if (!cli.parse(argc, argv)) return 0;
  const bool quick = cli.has("quick");
  const std::vector<Activation> acts =
      activations_for(quick ? "cv1,cv3" : cli.get("layers"), cli.get_int("batch"));
  const std::vector<Pair> pairs = parse_pairs(cli.get("pairs"));
  const int rounds = quick ? 2 : cli.get_int("rounds");
  const double round_s = (quick ? 2 : cli.get_double("round-ms")) / 1e3;
  TUNECNN_CHECK(rounds > 0 && round_s > 0, "bench layout: --rounds and --round-ms must be positive");
  TUNECNN_CHECK(cli.get_int("threads") >= 0 && cli.get_int("batch") > 0,
                "bench layout: --threads must be >= 0 and --batch > 0");
  set_num_threads(cli.get_int("threads"));
  const Device device = parse_bench_device(cli.get("device"));
  const bool gpu = device == Device::cuda;
  const std::function<double()> clock = device_clock(device);

  std::cout << "# " << cpu_fingerprint().summary() << "\n";
  print_gpu_fingerprint(std::cout, device);
  std::cout << "# bench layout: layers " << (quick ? "cv1,cv3 (--quick)" : cli.get("layers"))
            << ", device " << to_string(device) << ", threads " << num_threads() << ", f32, " << rounds << " interleaved rounds of "
            << round_s * 1e3 << " ms per contender; medians of per-call times\n"
            << (gpu ? "# GB/s = (bytes read + bytes written) / median; memcpy = one device-to-device "
                      "cudaMemcpy (d2d) over the same buffers\n"
                    : "# GB/s = (bytes read + bytes written) / median; memcpy = the faster of one "
                      "std::memcpy (single) and a TBB chunked memcpy (tbb) over the same buffers\n")
            << "# pct_memcpy = transform GB/s / memcpy GB/s; x_naive = naive_ms / ms ("
            << (gpu ? "the one-thread-per-element kernel" : "convert_layout_reference") << ")\n";
  std::printf("%-16s %-16s %-11s %8s %9s %7s %10s %8s %-6s %6s %10s %8s\n", "layer", "shape", "pair",
              "MiB", "ms", "GB/s", "memcpy_ms", "mc_GB/s", "memcpy", "pct", "naive_ms", "x_naive");
  Rng rng(1);
  int below = 0, total = 0;
  double worst = 1e300;
  std::string worst_name;
  for (const Activation& a : acts)
    for (const Pair& pair : pairs) {
      const Row r = gpu ? bench_on_gpu(a, pair, rounds, round_s, rng, clock)
                        : bench_on_cpu(a, pair, rounds, round_s, rng);
      const double pct = 100 * r.gbs / r.memcpy_gbs;
      const std::string shape = std::to_string(a.shape[0]) + "x" + std::to_string(a.shape[1]) +
                                "x" + std::to_string(a.shape[2]) + "x" + std::to_string(a.shape[3]);
      const double mib = 4.0 * a.shape[0] * a.shape[1] * a.shape[2] * a.shape[3] / 1048576.0;
      std::printf("%-16s %-16s %-11s %8.2f %9.3f %7.2f %10.3f %8.2f %-6s %5.0f%% %10.3f %8.2f\n",
                  a.name.c_str(), shape.c_str(), pair_name(pair).c_str(), mib, r.ms, r.gbs,
                  r.memcpy_ms, r.memcpy_gbs, r.memcpy_kind, pct, r.naive_ms, r.naive_ms / r.ms);
      std::fflush(stdout);
      ++total;
      below += pct < 50;
      if (pct < worst) worst = pct, worst_name = a.name + " " + pair_name(pair);
    }
  std::printf("result transforms=%d below_50pct_of_memcpy=%d worst_pct=%.0f worst=%s threads=%d\n",
              total, below, worst, worst_name.c_str(), num_threads());
  return 0;
}

}  // namespace tunecnn
