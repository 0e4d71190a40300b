// pool_tiled (ops/pool/tiled.h) against the reference pool_direct: every config, both kinds, both
// directions, every layout, f32 and f64, on odd sizes, ties, NaN and -inf; its config grid; and
// `bench pool --quick`. Every other CPU pool solver of the registry (oneDNN's, in a build with
// it) is checked against pool_direct on the same geometries, with ties, in every dtype it takes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "apps/bench/pool_bench.h"
#include "core/rng.h"
#include "ops/layout/transform.h"
#include "ops/pool/direct.h"
#include "ops/pool/registry.h"
#include "ops/pool/tiled.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

struct Geometry {
  int mb, c, ih, iw, kh, kw, sh, sw, ph, pw;
};

// Odd sizes, 1x1 outputs, padding, kh != kw, sh != sw, windows 2/2, 3/2, 3/1 and stride > window.
const std::vector<Geometry> kGeometries = {
    {2, 3, 13, 11, 3, 3, 2, 2, 1, 1},  // 3/2 padded, 7x6 out
    {3, 2, 13, 11, 2, 2, 2, 2, 0, 0},  // 2/2, odd input: the last row/column is dropped
    {1, 2, 7, 7, 3, 3, 1, 1, 1, 1},    // 3/1 padded, 7x7 out
    {2, 1, 7, 7, 3, 3, 2, 2, 0, 0},    // 3/2, 3x3 out
    {3, 2, 3, 3, 3, 3, 1, 1, 0, 0},    // 1x1 out
    {2, 3, 9, 6, 3, 2, 2, 1, 1, 0},    // kh != kw, sh != sw
    {1, 3, 5, 8, 2, 3, 1, 3, 1, 2},    // stride > window along x, padding on x
    {2, 2, 8, 8, 1, 1, 3, 2, 0, 0},    // 1x1 window with gaps between windows
    {1, 2, 19, 37, 3, 3, 2, 2, 0, 0},  // 9x18 out: every fx, fy including 16 and 8
};

PoolProblem problem_of(const Geometry& g, PoolKind kind, Direction dir, DType dt,
                       bool count_include_pad = false) {
  PoolProblem p;
  p.kind = kind, p.dir = dir, p.dt = dt, p.count_include_pad = count_include_pad;
  p.mb = g.mb, p.c = g.c, p.ih = g.ih, p.iw = g.iw, p.kh = g.kh, p.kw = g.kw;
  p.sh = g.sh, p.sw = g.sw, p.ph = g.ph, p.pw = g.pw;
  return p;
}

// NCHW inputs of a problem.
struct Inputs {
  Tensor src, diff_dst;
};

// Values from a few levels, so max windows tie often.
Inputs make_inputs(const PoolProblem& p, Rng& rng, bool ties) {
  Inputs in{testing::random_tensor(p.src_shape(), rng, p.dt),
            testing::random_tensor(p.dst_shape(), rng, p.dt)};
  if (ties)
    dispatch_dtype(p.dt, [&]<class T>() {
      T* s = in.src.data<T>();
      for (std::int64_t i = 0; i < in.src.numel(); ++i) s[i] = std::round(s[i] * 2);
    });
  return in;
}

// Runs `solver` in `layout` and returns its output in NCHW. Outputs start as garbage, so a solver
// that accumulates or skips an element fails.
Tensor run_in_layout(const PoolSolver& solver, const PoolProblem& p, const TuneConfig& config,
                     Layout layout, const Inputs& in) {
  PoolArgs args;
  const bool fwd = p.dir == Direction::fwd;
  if (fwd || p.kind == PoolKind::max) args.src = convert_layout(in.src, layout);
  Tensor out = Tensor::empty(fwd ? p.dst_shape() : p.src_shape(), p.dt, Device::cpu, layout);
  dispatch_dtype(p.dt, [&]<class T>() { std::fill(out.data<T>(), out.data<T>() + out.numel(), T(77)); });
  if (fwd) {
    args.dst = out;
  } else {
    args.diff_dst = convert_layout(in.diff_dst, layout);
    args.diff_src = out;
  }
  std::string why;
  EXPECT_TRUE(solver.applicable(p, &why)) << why;
  solver.run(p, config, args);
  return convert_layout(out, Layout::NCHW);
}

// Exact for max (NaN matches NaN), relative tolerance for average.
::testing::AssertionResult same(const Tensor& got, const Tensor& want, bool exact) {
  return dispatch_dtype(got.dtype(), [&]<class T>() -> ::testing::AssertionResult {
    const T* g = got.data<T>();
    const T* w = want.data<T>();
    const double tol = sizeof(T) == 4 ? 2e-6 : 1e-13;
    for (std::int64_t i = 0; i < got.numel(); ++i) {
      const bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
      const bool ok = both_nan || (exact ? g[i] == w[i]
                                         : std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i])));
      if (!ok)
        return ::testing::AssertionFailure()
               << "element " << i << ": got " << g[i] << ", want " << w[i];
    }
    return ::testing::AssertionSuccess();
  });
}

const TiledPoolSolver kTiled;
const DirectPoolSolver kDirect;

// Every config x layout of one problem against pool_direct in NCHW.
void check_all(const PoolProblem& p, const Inputs& in) {
  const Tensor want = run_in_layout(kDirect, p, TuneConfig{}, Layout::NCHW, in);
  for (Layout layout : kTiled.layouts(p))
    for (const TuneConfig& config : kTiled.configs(p)) {
      const Tensor got = run_in_layout(kTiled, p, config, layout, in);
      EXPECT_TRUE(same(got, want, p.kind == PoolKind::max))
          << p.key() << " " << to_string(layout) << " " << config.str();
    }
}

TEST(PoolTiled, MatchesDirectOnEveryConfigLayoutKindDirectionAndType) {
  Rng rng(7);
  for (const Geometry& g : kGeometries)
    for (DType dt : {DType::f32, DType::f64})
      for (PoolKind kind : {PoolKind::max, PoolKind::avg})
        for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
          const PoolProblem p = problem_of(g, kind, dir, dt);
          check_all(p, make_inputs(p, rng, kind == PoolKind::max));
        }
}

TEST(PoolSolvers, EveryOtherCpuSolverMatchesDirectInEveryLayoutKindAndDirection) {
  Rng rng(17);
  for (const PoolSolver* solver : cpu_pool_solvers()) {
    if (solver == &direct_pool_solver() || solver->name() == kTiled.name()) continue;
    for (const Geometry& g : kGeometries)
      for (DType dt : {DType::f32, DType::f64})
        for (PoolKind kind : {PoolKind::max, PoolKind::avg})
          for (bool include_pad : {false, true})
            for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
              if (include_pad && kind == PoolKind::max) continue;
              const PoolProblem p = problem_of(g, kind, dir, dt, include_pad);
              if (!solver->applicable(p, nullptr)) continue;
              const Inputs in = make_inputs(p, rng, kind == PoolKind::max);
              const Tensor want = run_in_layout(kDirect, p, TuneConfig{}, Layout::NCHW, in);
              // Max forward picks values, exactly; backward adds overlapping windows' gradients in
              // its own order (ties still go to the first maximum, or the sums would be far off).
              const bool exact = kind == PoolKind::max && dir == Direction::fwd;
              for (Layout layout : solver->layouts(p))
                for (const TuneConfig& config : solver->configs(p))
                  EXPECT_TRUE(same(run_in_layout(*solver, p, config, layout, in), want, exact))
                      << solver->name() << " " << p.key() << " " << to_string(layout) << " " << config.str();
            }
  }
}

TEST(PoolTiled, AverageCountIncludePad) {
  Rng rng(8);
  for (const Geometry& g : kGeometries)
    for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
      const PoolProblem p = problem_of(g, PoolKind::avg, dir, DType::f32, true);
      check_all(p, make_inputs(p, rng, false));
    }
}

// NaN wins its windows, windows of -inf still pick their first pixel, ties go to the first.
TEST(PoolTiled, MaxNanInfinityAndTiesFollowTheReference) {
  Rng rng(9);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const Geometry& g : kGeometries)
    for (DType dt : {DType::f32, DType::f64})
      for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
        const PoolProblem p = problem_of(g, PoolKind::max, dir, dt);
        Inputs in = make_inputs(p, rng, true);
        dispatch_dtype(dt, [&]<class T>() {
          T* s = in.src.data<T>();
          for (std::int64_t i = 0; i < in.src.numel(); ++i) {
            const std::uint64_t r = rng.next_u64() % 16;
            if (r == 0) s[i] = static_cast<T>(nan);
            if (r == 1 || r == 2) s[i] = static_cast<T>(-inf);
            if (r == 3) s[i] = T(-0.0);
          }
          // A plane of -inf only: every window ties.
          std::fill(s, s + static_cast<std::int64_t>(p.ih) * p.iw, static_cast<T>(-inf));
        });
        check_all(p, in);
      }
}

// The checks above can fail: a wrong answer is caught.
TEST(PoolTiled, ComparisonCatchesAWrongValue) {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 1, 1, 3});
  Tensor b = a.clone();
  EXPECT_TRUE(same(a, b, true));
  b.data<float>()[2] = std::nextafter(3.0f, 4.0f);
  EXPECT_FALSE(same(a, b, true));
  b.data<float>()[2] = 3.5f;
  EXPECT_FALSE(same(a, b, false));
}

TEST(PoolTiled, ConfigsStartAtCoarseningOneAndFormTheGrid) {
  PoolProblem p = problem_of({1, 1, 55, 55, 3, 3, 2, 2, 0, 0}, PoolKind::max, Direction::fwd,
                             DType::f32);  // 27x27 out: the whole grid
  const std::vector<TuneConfig> configs = kTiled.configs(p);
  ASSERT_FALSE(configs.empty());
  EXPECT_EQ(configs.front().str(), "fx=1,fy=1");
  std::set<std::pair<int, int>> seen;
  for (const TuneConfig& c : configs) {
    ASSERT_EQ(c.values.size(), 2u);
    EXPECT_EQ(c.values[0].first, "fx");
    EXPECT_EQ(c.values[1].first, "fy");
    EXPECT_TRUE(seen.insert({c.get("fx", 0), c.get("fy", 0)}).second) << c.str();
  }
  std::set<std::pair<int, int>> grid;
  for (int fx : kPoolTileWidths)
    for (int fy : kPoolTileHeights) grid.insert({fx, fy});
  EXPECT_EQ(seen, grid);

  p.ih = 3, p.iw = 11;  // 1x5 out: fx up to 4, fy only 1
  std::set<std::pair<int, int>> small;
  for (const TuneConfig& c : kTiled.configs(p)) small.insert({c.get("fx", 0), c.get("fy", 0)});
  EXPECT_EQ(small, (std::set<std::pair<int, int>>{{1, 1}, {2, 1}, {3, 1}, {4, 1}}));
  EXPECT_EQ(kTiled.configs(p).front().str(), "fx=1,fy=1");
}

TEST(PoolTiled, RegistryPrefersItAndKeepsDirectLast) {
  const auto solvers = cpu_pool_solvers();
  ASSERT_GE(solvers.size(), 2u);
  EXPECT_EQ(solvers.front()->name(), "pool_tiled");
  EXPECT_EQ(solvers.back(), &direct_pool_solver());
  EXPECT_NE(find_pool_solver("pool_tiled"), nullptr);
}

TEST(PoolTiled, RejectsMismatchedTensors) {
  const PoolProblem p =
      problem_of(kGeometries[0], PoolKind::max, Direction::fwd, DType::f32);
  PoolArgs args;
  args.src = Tensor::zeros(p.src_shape(), DType::f32, Device::cpu, Layout::CHWN);
  args.dst = Tensor::zeros(p.dst_shape());  // NCHW: disagrees with src
  EXPECT_THROW(kTiled.run(p, kTiled.configs(p).front(), args), Error);
  EXPECT_FALSE(kTiled.applicable(p.with_dir(Direction::bwd_weights), nullptr));
}

TEST(BenchPool, QuickRunPrintsTheTable) {
  std::vector<const char*> argv = {"pool", "--quick"};
  ::testing::internal::CaptureStdout();
  const int rc = bench_pool(static_cast<int>(argv.size()), argv.data());
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0) << out;
  for (const char* column : {"layer", "layout", "dir", "kind", "solver", "config", "median_ms",
                             "GB/s", "vs_1x1", "pool_direct", "pool_tiled", "fx=1,fy=1",
                             "tuned"})
    EXPECT_NE(out.find(column), std::string::npos) << column << " missing in:\n" << out;
  EXPECT_EQ(out.rfind("# ", 0), 0u) << out;
}

}  // namespace
}  // namespace tunecnn
