// Diagonalwise refactorization on the GPU (Qin et al., PAPERS.md section 3): with the C channels in
// G = C/S groups of S, W_hat[o, j] = (j == o % S) ? W[o, 0] : 0 makes the depthwise convolution
// the grouped convolution {g = C/S, weights W_hat [C, S, kh, kw]}, which cuDNN runs for every
// group in ONE call (cudnnSetConvolutionGroupCount), with its heuristic algorithm and FMA math
// (cudnn_cuda.cpp). A kernel writes all of W_hat, zeros included, so nothing needs clearing.
// bwd_data convolves with W_hat too; bwd_weights has cuDNN compute the dense [C, S, kh, kw]
// gradient into the workspace and a kernel keeps its diagonal (Qin's masked gradient).
// Constraints: NCHW on the GPU, f32/f64, depthwise with multiplier 1 (g == ic == oc > 1), the CPU
// diagonal's group sizes for which cuDNN has an algorithm. Tunable: "S", the group size.
// Workspace: W_hat (or the dense gradient), then cuDNN's workspace for its algorithm. Runs repeat
// bit for bit only as far as that algorithm does (some of cuDNN's backward ones add atomically).
#include "core/cuda_elementwise.cuh"
#include "ops/conv/args.h"
#include "ops/conv/cudnn.h"
#include "ops/conv/diagonal.h"
#include "ops/conv/im2col_gemm.h"

namespace tunecnn {
namespace {

const DiagonalSolver kCpuDiagonal;  // its guards and group sizes are the GPU's too
const CudnnSolver kCudnn;

// cuDNN's workspace starts after W_hat on cudaMalloc's alignment, which cuDNN's kernels may
// assume of the pointer they are given.
constexpr std::size_t kCudnnAlignment = 256;

// The grouped convolution the depthwise problem becomes.
ConvProblem refactorized(const ConvProblem& p, int s) {
  ConvProblem q = p;
  q.g = p.ic / s;
  return q;
}

int group_size(const ConvProblem& p, const TuneConfig& config) {
  const int s = config.get("S", 0);
  TUNECNN_CHECK(s > 0 && p.ic % s == 0, "diagonal (CUDA): group size S=", s,
                " does not divide C=", p.ic, " (config '", config.str(), "') for ", p.key());
  return s;
}

// W_hat, or for bwd_weights the dense gradient: [C, S, kh, kw].
std::size_t dense_weight_bytes(const ConvProblem& p, int s) {
  const std::size_t bytes = static_cast<std::size_t>(p.oc) * s * p.kh * p.kw * dtype_size(p.dt);
  return (bytes + kCudnnAlignment - 1) / kCudnnAlignment * kCudnnAlignment;
}

// w_hat[o, j, t] = W[o, t] on the diagonal j == o % S, zero elsewhere: every element written.
template <class T>
void scatter_diagonal(const ConvProblem& p, int s, const T* wei, T* w_hat) {
  const std::int64_t taps = static_cast<std::int64_t>(p.kh) * p.kw, group = s;
  launch_elementwise(p.oc * group * taps, [=] __device__(std::int64_t e) {
    const std::int64_t t = e % taps, j = e / taps % group, o = e / (taps * group);
    w_hat[e] = j == o % group ? wei[o * taps + t] : T(0);
  });
}

// diff_wei[o, t] = dense[o, o % S, t]: the masked gradient, the only entries W depends on.
template <class T>
void take_diagonal(const ConvProblem& p, int s, const T* dense, T* diff_wei) {
  const std::int64_t taps = static_cast<std::int64_t>(p.kh) * p.kw, group = s;
  launch_elementwise(p.oc * taps, [=] __device__(std::int64_t e) {
    const std::int64_t t = e % taps, o = e / taps;
    diff_wei[e] = dense[(o * group + o % group) * taps + t];
  });
}

template <class T>
const T* input(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

template <class T>
void run_typed(const ConvProblem& p, int s, const ConvArgs& args, Workspace ws) {
  const ConvProblem q = refactorized(p, s);
  T* dense = ws.as<T>();
  const std::size_t dense_bytes = dense_weight_bytes(p, s);
  const Workspace inner{ws.as<char>() + dense_bytes, ws.bytes - dense_bytes};
  const TuneConfig heuristic;  // cuDNN's own choice of algorithm for q
  switch (p.dir) {
    case Direction::fwd:
      scatter_diagonal(p, s, input<T>(args.wei), dense);
      run_cudnn(
          q, heuristic,
          ConvBuffers<T>{.src = input<T>(args.src), .wei = dense, .dst = writable<T>(args.dst)},
          inner);
      return;
    case Direction::bwd_data:
      scatter_diagonal(p, s, input<T>(args.wei), dense);
      run_cudnn(q, heuristic,
                ConvBuffers<T>{.wei = dense,
                               .diff_dst = input<T>(args.diff_dst),
                               .diff_src = writable<T>(args.diff_src)},
                inner);
      return;
    case Direction::bwd_weights:
      run_cudnn(
          q, heuristic,
          ConvBuffers<T>{
              .src = input<T>(args.src), .diff_dst = input<T>(args.diff_dst), .diff_wei = dense},
          inner);
      take_diagonal(p, s, dense, writable<T>(args.diff_wei));
      return;
  }
}

}  // namespace

bool DiagonalCudaSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (p.device != Device::cuda)
    return reject(why, "a CUDA solver; the problem runs on " + std::string(to_string(p.device)));
  if (!kCpuDiagonal.applicable(p, why)) return false;
  if (configs(p).empty()) {
    const int smallest = kCpuDiagonal.configs(p).front().get("S", 0);
    std::string cudnn_why;
    kCudnn.applicable(refactorized(p, smallest), &cudnn_why);
    return reject(why, "cuDNN runs the grouped convolution of no group size S (S=" +
                           std::to_string(smallest) + ": " + cudnn_why + ")");
  }
  return true;
}

// Without a GPU cuDNN cannot be asked and kCudnn accepts every well-formed problem, so the
// listing still works there.
std::vector<TuneConfig> DiagonalCudaSolver::configs(const ConvProblem& p) const {
  std::vector<TuneConfig> configs;
  for (const TuneConfig& config : kCpuDiagonal.configs(p))
    if (kCudnn.applicable(refactorized(p, config.get("S", 0)), nullptr)) configs.push_back(config);
  return configs;
}

std::size_t DiagonalCudaSolver::workspace_bytes(const ConvProblem& p,
                                                const TuneConfig& config) const {
  const int s = group_size(p, config);
  return dense_weight_bytes(p, s) + kCudnn.workspace_bytes(refactorized(p, s), TuneConfig{});
}

// As deterministic as the algorithm cuDNN's heuristic picks for the grouped convolution; the
// scatter and the diagonal's gather are plain copies.
bool DiagonalCudaSolver::deterministic(const ConvProblem& p, const TuneConfig& config) const {
  return kCudnn.deterministic(refactorized(p, group_size(p, config)), TuneConfig{});
}

void DiagonalCudaSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                             Workspace ws) const {
  TUNECNN_CHECK(p.device == Device::cuda, "diagonal (CUDA) runs GPU problems only, got ", p.key(),
                " on ", to_string(p.device));
  check_conv_args(p, args, Layout::NCHW);
  std::string why;
  TUNECNN_CHECK(kCpuDiagonal.applicable(p, &why), "diagonal (CUDA): ", why, ": ", p.key());
  const int s = group_size(p, config);
  const std::size_t need = workspace_bytes(p, config);
  TUNECNN_CHECK(ws.bytes >= need, "diagonal (CUDA) [", config.str(), "] needs ", need,
                " workspace bytes, got ", ws.bytes, " for ", p.key());
  if (p.dt == DType::f64) return run_typed<double>(p, s, args, ws);
  run_typed<float>(p, s, args, ws);
}

}  // namespace tunecnn
