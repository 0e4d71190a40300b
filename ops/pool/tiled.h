#pragma once
// "pool_tiled": pooling with thread coarsening (Li et al., SC'16, PAPERS.md section 2) brought to
// the CPU. Max and average, forward and bwd_data, any window/stride/padding that
// PoolProblem::validate() accepts, in NCHW, CHWN and NHWC.
//
// What it does. A pixel is a vector of V contiguous values: NCHW V = 1 over N*C planes, CHWN
// V = N over C planes, NHWC V = C over N planes. One work item computes a tile of fy output rows x
// fx output columns of one plane, separably: each input row of the tile's input band is reduced
// horizontally once (max or sum over kw, clipped at the borders) and folded into every output row
// of the tile whose window contains it. With overlapped windows (kh > sh) the input rows shared by
// neighbouring output rows are then reduced once per tile instead of once per output row: the
// CPU form of the paper's "keep the shared inputs in registers". Inner loops run over contiguous
// memory so the compiler vectorises them: over the V values of a pixel when V > 1, over the output
// columns of the tile when V = 1 (the tile widths of the configs and strides 1 and 2 are compiled
// as constants, so a tile row stays in registers). Selects are bit blends, never branches: on
// random data a branch per compare mispredicts and costs more than the pooling itself.
// Coarsening 1 in NCHW (V = 1, one output per step) has nothing to share, so it scans each window
// directly, branch-free; it is the baseline the tiles must beat, and already well ahead of
// pool_direct, whose compares branch.
//
// Backward: max recomputes the argmax from src exactly as pool_direct does (first maximum in
// row-major window order, a NaN wins): separably, the first maximum of each row, then the first
// row whose maximum is strictly greater, which is the same pixel. Its gradients are added in
// row-major output order, pool_direct's order, so max backward is bit-identical to it. Average
// backward scatters each output's share separably (sums of shares per input row, then spread over
// the row's columns), so its rounding differs from pool_direct's in the last bits.
//
// Config {"fx", fx}, {"fy", fy}: fx in {1,2,3,4,6,8,12,16}, fy in {1,2,3,4,6,8}, each limited to
// the output width/height (1 always stays), the full grid, (1,1) first: "coarsening 1", the
// untuned default and the baseline the tuner's gain is measured against.
//
// Threads: forward runs (plane, tile row) items as TBB tasks, each writing only its own output
// rows; backward runs whole planes as tasks (row tiles of one plane overlap in diff_src when
// kh > sh), each zeroing and writing only its own plane in a fixed order (rows are zeroed just
// before the first tile row that adds into them, one sweep over the plane). Results therefore do
// not depend on scheduling.
//
// The GPU solver of the same name (tiled.cu, CUDA builds only) coarsens along rows only (no fy):
// see CudaTiledPoolSolver below.
#include <array>

#include "ops/pool/solver.h"

namespace tunecnn {

// The coarsening factors configs() draws from, each starting with 1.
inline constexpr std::array<int, 8> kPoolTileWidths{1, 2, 3, 4, 6, 8, 12, 16};
inline constexpr std::array<int, 6> kPoolTileHeights{1, 2, 3, 4, 6, 8};

class TiledPoolSolver final : public PoolSolver {
 public:
  std::string_view name() const override { return "pool_tiled"; }
  bool applicable(const PoolProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const PoolProblem& problem) const override;
  std::vector<TuneConfig> configs(const PoolProblem& problem) const override;
  void run(const PoolProblem& problem, const TuneConfig& config,
           const PoolArgs& args) const override;
};

// The coarsening factors of the GPU solver (outputs per thread along a row), 1 first.
inline constexpr std::array<int, 4> kGpuPoolFactors{1, 2, 4, 8};

// The GPU twin, defined in tiled.cu (CUDA builds only): NCHW and CHWN, one thread per F
// consecutive outputs of a row forward and F consecutive input pixels of a row backward, config
// {"fx", F} with F from kGpuPoolFactors up to that row's length. Bit for bit pool_direct's results
// for max, and the same summation order for average.
class CudaTiledPoolSolver final : public PoolSolver {
 public:
  std::string_view name() const override { return "pool_tiled"; }
  Device device() const override { return Device::cuda; }
  bool applicable(const PoolProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const PoolProblem& problem) const override;
  std::vector<TuneConfig> configs(const PoolProblem& problem) const override;
  void run(const PoolProblem& problem, const TuneConfig& config,
           const PoolArgs& args) const override;
};

}  // namespace tunecnn
