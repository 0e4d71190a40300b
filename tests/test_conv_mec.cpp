// MEC-specific checks the generic solver suite cannot make: which of the paper's two solutions
// each config selects, which chunks the configs offer, the size of the compact lowering against
// im2col's on the paper's layers, what the workspace holds and how it shrinks with the chunk,
// and that the chunk does not change the results. Numerics are in test_conv_solvers.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "models/conv_layers.h"
#include "ops/conv/mec.h"
#include "ops/conv/registry.h"
#include "ops/layout/reference.h"
#include "tests/support/conv_testing.h"

namespace tunecnn {
namespace {

using namespace tunecnn::testing;

const ConvSolver& mec() {
  return *find_conv_solver("mec");
}

// The paper's im2col lowering of the whole batch: (mb*oh*ow) x (kh*kw*ic).
std::size_t im2col_elements(const ConvProblem& p) {
  return static_cast<std::size_t>(p.mb) * p.oh() * p.ow() * p.kh * p.kw * p.ic;
}

std::size_t aligned(std::size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

ConvProblem layer(const std::string& name) {
  for (const ConvLayer& l : conv_layer_set("mec-paper", 8))
    if (l.name == name) return l.problem;
  throw std::out_of_range(name);
}

TEST(Mec, ThresholdSelectsSolutionAOnlyWhenTheOutputFitsInL) {
  const ConvProblem cv10 = layer("cv10");  // ow 26
  EXPECT_TRUE(mec_uses_solution_a(cv10, {{{"T", 26}}}));
  EXPECT_FALSE(mec_uses_solution_a(cv10, {{{"T", 25}}}));
  EXPECT_TRUE(mec_uses_solution_a(cv10, {}));           // the paper's T = 100
  EXPECT_FALSE(mec_uses_solution_a(layer("cv7"), {}));  // ow 222
  // A 1x1 kernel widening 2 channels to 16: |O| = 8 |L|, so A has no room to permute its result.
  const ConvProblem widening{Direction::fwd, 2, 2, 6, 6, 16, 1, 1, 1, 1, 0, 0, 1};
  EXPECT_FALSE(mec_uses_solution_a(widening, {{{"T", 1000}}}));
  for (const TuneConfig& config : mec().configs(widening))
    EXPECT_FALSE(mec_uses_solution_a(widening, config)) << config.str();
  // One image per chunk: A's GEMMs are B's, so it runs as B, without a permutation.
  EXPECT_TRUE(mec_uses_solution_a(cv10, {{{"T", 26}, {"chunk", 2}}}));
  EXPECT_FALSE(mec_uses_solution_a(cv10, {{{"T", 26}, {"chunk", 1}}}));
}

TEST(Mec, ChunkDefaultsToTheBatchAndIsClamped) {
  const ConvProblem cv10 = layer("cv10");  // mb 8
  EXPECT_EQ(mec_chunk(cv10, {}), 8);
  EXPECT_EQ(mec_chunk(cv10, {{{"chunk", 3}}}), 3);
  EXPECT_EQ(mec_chunk(cv10, {{{"chunk", 0}}}), 1);
  EXPECT_EQ(mec_chunk(cv10, {{{"chunk", 100}}}), 8);
}

// The suite runs every config, so both solutions are tested wherever A is possible.
TEST(Mec, ConfigsStartWithThePaperThresholdAndCoverBothSolutions) {
  std::vector<ConvProblem> problems;
  for (const ConvShape& shape : edge_case_shapes()) problems.push_back(shape.problem);
  for (const ConvShape& shape : model_layer_shapes()) problems.push_back(shape.problem);
  for (const ConvLayer& l : conv_layer_set("mec-paper", 8)) problems.push_back(l.problem);
  int both = 0;
  for (const ConvProblem& p : problems) {
    if (!mec().applicable(p, nullptr)) continue;
    const std::vector<TuneConfig> configs = mec().configs(p);
    ASSERT_FALSE(configs.empty());
    EXPECT_EQ(configs.front().get("T", -1), 100) << p.key();
    const bool a_possible = mec_uses_solution_a(p, {{{"T", p.ow()}}});
    const auto uses_a = [&](const TuneConfig& c) { return mec_uses_solution_a(p, c); };
    EXPECT_EQ(std::any_of(configs.begin(), configs.end(), uses_a), a_possible) << p.key();
    EXPECT_FALSE(std::all_of(configs.begin(), configs.end(), uses_a)) << p.key();
    for (int mt : {0, 1})
      EXPECT_TRUE(std::any_of(configs.begin(), configs.end(), [&](const TuneConfig& c) {
        return c.get("mt", -1) == mt;
      })) << p.key();
    both += a_possible;
  }
  EXPECT_GT(both, 20);
}

// The default chunk, the paper's whole batch and one image; no config twice, and with one image
// no second T (A and B coincide there).
TEST(Mec, ConfigsCoverChunkOneAndTheWholeBatchOnce) {
  std::vector<ConvProblem> problems;
  for (const ConvShape& shape : edge_case_shapes()) problems.push_back(shape.problem);
  for (const ConvLayer& l : conv_layer_set("mec-paper", 8)) problems.push_back(l.problem);
  for (const ConvProblem& p : problems) {
    if (!mec().applicable(p, nullptr)) continue;
    const std::vector<TuneConfig> configs = mec().configs(p);
    std::vector<int> chunks;
    for (const TuneConfig& c : configs) {
      ASSERT_NE(c.get("chunk", -1), -1) << c.str();
      EXPECT_EQ(c.get("chunk", -1), mec_chunk(p, c)) << c.str() << " " << p.key();
      EXPECT_EQ(std::count(configs.begin(), configs.end(), c), 1) << c.str() << " " << p.key();
      if (c.get("chunk", -1) == 1) {
        EXPECT_EQ(c.get("T", -1), 100) << p.key();
      }
      if (std::find(chunks.begin(), chunks.end(), c.get("chunk", -1)) == chunks.end())
        chunks.push_back(c.get("chunk", -1));
    }
    EXPECT_NE(std::find(chunks.begin(), chunks.end(), 1), chunks.end()) << p.key();
    EXPECT_NE(std::find(chunks.begin(), chunks.end(), p.mb), chunks.end()) << p.key();
    EXPECT_LE(chunks.size(), 3u) << p.key();
    EXPECT_LE(configs.size(), 10u) << p.key();
  }
}

// The default lowers one image at a time where it runs Solution B (B's GEMMs are per image
// anyway), and for A the fewest images that give its GEMMs 64 rows.
TEST(Mec, DefaultChunkOnThePaperLayers) {
  for (const ConvLayer& l : conv_layer_set("mec-paper", 8)) {
    const ConvProblem& p = l.problem;
    const TuneConfig front = mec().configs(p).front();
    const int chunk = mec_chunk(p, front);
    if (!mec_uses_solution_a(p, {{{"T", 100}}})) {
      EXPECT_EQ(chunk, 1) << l.name;
      continue;
    }
    EXPECT_TRUE(mec_uses_solution_a(p, front)) << l.name;
    EXPECT_TRUE(chunk == p.mb || chunk * p.ow() >= 64) << l.name;
    EXPECT_LT(chunk / 2 * p.ow(), 64) << l.name;
  }
  EXPECT_EQ(mec_chunk(layer("cv4"), mec().configs(layer("cv4")).front()), 1);    // B: ow 109
  EXPECT_EQ(mec_chunk(layer("cv9"), mec().configs(layer("cv9")).front()), 2);    // ow 54
  EXPECT_EQ(mec_chunk(layer("cv12"), mec().configs(layer("cv12")).front()), 8);  // ow 5
}

// At the paper's T the defaults already split the paper's layers between the two solutions.
TEST(Mec, PaperThresholdUsesBothSolutionsOnThePaperLayers) {
  int a = 0, b = 0;
  for (const ConvLayer& l : conv_layer_set("mec-paper", 8))
    (mec_uses_solution_a(l.problem, mec().configs(l.problem).front()) ? a : b) += 1;
  EXPECT_GT(a, 0);
  EXPECT_GT(b, 0);
}

TEST(Mec, LoweredSizeIsBatchTimesOwTimesPaddedHeightTimesKwTimesIc) {
  for (const ConvShape& shape : edge_case_shapes()) {
    const ConvProblem& p = shape.problem;
    EXPECT_EQ(mec_lowered_elements(p),
              static_cast<std::size_t>(p.mb) * p.ow() * (p.ih + 2 * p.ph) * p.kw * p.ic)
        << p.key();
  }
  const ConvProblem k5_s2_p2 = edge_case_shapes()[6].problem;  // mb2 ic2 ih9 iw11 k5 s2 p2
  EXPECT_EQ(mec_lowered_elements(k5_s2_p2), 2u * 6 * 13 * 5 * 2);
}

// Cho and Brand: about kh/sh times less than im2col, 3.2x over their layers. Per layer the
// factor is oh*kh/ih, so small images (cv12: 7 rows, 5 outputs) fall furthest below kh/sh.
TEST(Mec, LoweringIsAboutKhOverShSmallerThanIm2colOnThePaperLayers) {
  double mec_total = 0, im2col_total = 0;
  for (const ConvLayer& l : conv_layer_set("mec-paper", 8)) {
    const ConvProblem& p = l.problem;
    const double ratio = double(im2col_elements(p)) / double(mec_lowered_elements(p));
    EXPECT_GE(ratio, 0.7 * p.kh / p.sh) << l.name;
    EXPECT_GE(ratio, 2.0) << l.name;
    mec_total += double(mec_lowered_elements(p));
    im2col_total += double(im2col_elements(p));
  }
  EXPECT_GE(im2col_total / mec_total, 3.0);
}

// The workspace is a chunk's L plus the repacked weights; only where the weights outweigh the
// images (cv6 and cv12 at batch 8) is it not below im2col's full-batch lowering.
TEST(Mec, WorkspaceIsBelowIm2colsFullBatchLowering) {
  double mec_total = 0, im2col_total = 0;
  for (const ConvLayer& l : conv_layer_set("mec-paper", 8)) {
    const ConvProblem& p = l.problem;
    const std::size_t weights = static_cast<std::size_t>(p.oc) * p.kh * p.kw * p.ic;
    const TuneConfig front = mec().configs(p).front();
    const std::size_t bytes = mec().workspace_bytes(p, front);
    const std::size_t lowered = mec_lowered_elements(p) / p.mb * mec_chunk(p, front);
    EXPECT_EQ(bytes, aligned(4 * lowered) + aligned(4 * weights)) << l.name;
    if (weights < mec_lowered_elements(p)) {
      EXPECT_LT(bytes, 4 * im2col_elements(p)) << l.name;
    }
    mec_total += double(bytes);
    im2col_total += 4.0 * double(im2col_elements(p));
  }
  EXPECT_LT(mec_total, 0.5 * im2col_total);
}

// chunk == mb is the paper's layout (and the old one): all of L plus the weights. Smaller chunks
// shrink L in proportion, in every direction; chunk 1's L is mb times smaller.
TEST(Mec, WorkspaceShrinksWithTheChunk) {
  for (const ConvLayer& l : conv_layer_set("mec-paper", 8))
    for (Direction dir : kAllDirections) {
      const ConvProblem p = l.problem.with_dir(dir);
      const std::size_t weights = aligned(4 * static_cast<std::size_t>(p.oc) * p.kh * p.kw * p.ic);
      const std::size_t lowered = mec_lowered_elements(p);
      for (int mt : {0, 1}) {
        const TuneConfig whole{{{"chunk", p.mb}, {"T", 0}, {"mt", mt}}};
        const TuneConfig one{{{"chunk", 1}, {"T", 0}, {"mt", mt}}};
        EXPECT_EQ(mec().workspace_bytes(p, TuneConfig{{{"T", 0}, {"mt", mt}}}),
                  mec().workspace_bytes(p, whole));
        // bwd_weights with mt=0 adds dK partials, the same for any chunk.
        const std::size_t extra = mec().workspace_bytes(p, whole) - aligned(4 * lowered) - weights;
        EXPECT_EQ(extra, dir == Direction::bwd_weights && mt == 0 ? weights : 0) << l.name;
        EXPECT_EQ(mec().workspace_bytes(p, one), extra + weights + aligned(4 * lowered / p.mb))
            << l.name;
        std::size_t previous = 0;
        for (int chunk = 1; chunk <= p.mb; ++chunk) {
          const std::size_t bytes =
              mec().workspace_bytes(p, {{{"chunk", chunk}, {"mt", mt}, {"T", 0}}});
          EXPECT_GT(bytes, previous) << l.name << " chunk " << chunk;
          previous = bytes;
        }
      }
    }
  const ConvProblem cv4 = layer("cv4");  // 333.8 MiB of L for the whole batch
  EXPECT_LT(mec().workspace_bytes(cv4, mec().configs(cv4).front()), 45u << 20);
}

// Forward A permutes its result through L, so it costs nothing over B; backward A reads dO in
// h-n-w-c order from a region of its own.
TEST(Mec, SolutionANeedsExtraMemoryOnlyBackward) {
  const ConvProblem cv10 = layer("cv10");
  const TuneConfig a{{{"T", 1000}}}, b{{{"T", 0}}};
  EXPECT_EQ(mec().workspace_bytes(cv10, a), mec().workspace_bytes(cv10, b));
  const std::size_t out = static_cast<std::size_t>(cv10.mb) * cv10.oh() * cv10.ow() * cv10.oc;
  const ConvProblem bwd_data = cv10.with_dir(Direction::bwd_data);
  EXPECT_EQ(mec().workspace_bytes(bwd_data, a) - mec().workspace_bytes(bwd_data, b),
            aligned(4 * out));
  // ... a chunk's worth of dO.
  const TuneConfig a2{{{"T", 1000}, {"chunk", 2}}}, b2{{{"T", 0}, {"chunk", 2}}};
  EXPECT_EQ(mec().workspace_bytes(bwd_data, a2) - mec().workspace_bytes(bwd_data, b2),
            aligned(4 * out / cv10.mb * 2));
}

// Every chunk, a divisor of the batch or not, in both solutions and both mt, gives the whole
// batch's results: bitwise forward in Solution B (the same GEMMs), to 1e-12 otherwise (A's GEMMs
// have chunk*ow rows, and backward sums the chunks).
TEST(Mec, ResultsDoNotDependOnTheChunk) {
  std::vector<ConvProblem> problems = {
      ConvProblem{Direction::fwd, 5, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1},
      ConvProblem{Direction::fwd, 7, 2, 11, 9, 3, 5, 3, 2, 1, 2, 0, 1},
  };
  for (const char* name : {"k3_s3", "k5_s2_p2"})
    for (const ConvShape& shape : edge_case_shapes())
      if (shape.name == name) problems.push_back(shape.problem);
  for (const ConvProblem& fwd : problems)
    for (Direction dir : kAllDirections) {
      ConvProblem p = fwd.with_dir(dir);
      p.dt = DType::f64;
      ConvArgs args = make_conv_args(p, 9);
      for (Tensor* t : {&args.src, &args.dst, &args.diff_src, &args.diff_dst})
        *t = convert_layout_reference(*t, Layout::NHWC);
      for (int t : {0, 1000})
        for (int mt : {0, 1}) {
          const TuneConfig whole{{{"chunk", p.mb}, {"T", t}, {"mt", mt}}};
          const auto run = [&](const TuneConfig& config) {
            run_conv({&mec(), config}, p, args);
            return conv_output(args, dir).clone();
          };
          const Tensor want = run(whole);
          for (int chunk = 1; chunk < p.mb; ++chunk) {
            const TuneConfig config{{{"chunk", chunk}, {"T", t}, {"mt", mt}}};
            const Tensor got = run(config);
            const bool bitwise = dir == Direction::fwd && !mec_uses_solution_a(p, whole);
            if (bitwise) {
              ASSERT_EQ(got.numel(), want.numel());
              EXPECT_TRUE(std::equal(got.data<double>(), got.data<double>() + got.numel(),
                                     want.data<double>()))
                  << "[" << config.str() << "] " << p.key();
            } else {
              EXPECT_TRUE(close_relative(got, want, 1e-12))
                  << "[" << config.str() << "] " << p.key();
            }
          }
        }
    }
}

// Backward-data clears only the columns of dL that its first phase does not overwrite; a
// workspace full of NaN shows any it misses, on shapes with gaps between partitions (sh > kh),
// borders wider than the kernel, and a kernel row count not divisible by the stride.
TEST(Mec, ResultsDoNotDependOnTheWorkspaceContents) {
  std::vector<ConvProblem> problems = {
      ConvProblem{Direction::fwd, 2, 3, 11, 9, 4, 2, 3, 3, 2, 1, 0, 1},
      ConvProblem{Direction::fwd, 3, 2, 9, 8, 3, 5, 3, 2, 1, 3, 1, 1},
  };
  for (const char* name : {"k1_stride2", "k3_s3", "pad3_k3", "k5_s2_p2", "aniso_k5x3"})
    for (const ConvShape& shape : edge_case_shapes())
      if (shape.name == name) problems.push_back(shape.problem);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const ConvProblem& fwd : problems)
    for (Direction dir : kAllDirections) {
      ConvProblem p = fwd.with_dir(dir);
      p.dt = DType::f64;
      const ConvArgs nchw = make_conv_args(p, 5);
      const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, nchw, Layout::NCHW);
      for (const TuneConfig& config : mec().configs(p)) {
        ConvArgs args = nchw;
        for (Tensor* t : {&args.src, &args.dst, &args.diff_src, &args.diff_dst})
          *t = convert_layout_reference(*t, Layout::NHWC);
        args.diff_wei = nchw.diff_wei.clone();
        const std::size_t bytes = mec().workspace_bytes(p, config);
        std::vector<double> workspace(bytes / sizeof(double) + 1, nan);
        mec().run(p, config, args, Workspace{workspace.data(), bytes});
        const Tensor got = convert_layout_reference(conv_output(args, dir), Layout::NCHW);
        EXPECT_TRUE(close_relative(got, want, 1e-12)) << "[" << config.str() << "] " << p.key();
      }
    }
}

TEST(Mec, AppliesToUngroupedF32AndF64InEveryDirectionOnly) {
  for (const ConvShape& shape : edge_case_shapes())
    for (Direction dir : kAllDirections)
      for (DType dt : {DType::f32, DType::f64}) {
        std::string why;
        const ConvProblem p = shape.with(dir, dt);
        EXPECT_EQ(mec().applicable(p, &why), p.g == 1) << p.key();
        if (p.g != 1) {
          EXPECT_NE(why.find("groups"), std::string::npos) << why;
        }
      }
  EXPECT_EQ(mec().layouts(layer("cv1")), std::vector<Layout>{Layout::NHWC});
}

}  // namespace
}  // namespace tunecnn
