// Winograd-specific checks the generic solver suite cannot make: the transforms on a tile worked
// by hand, blocks that cut tile rows and images apart, the workspace formula and that it does not
// grow with the batch, the configs, and the reasons for rejecting a problem. The suite in
// test_conv_solvers.cpp compares every config against the reference on every shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "ops/conv/registry.h"
#include "tests/support/conv_testing.h"

namespace tunecnn {
namespace {

using namespace tunecnn::testing;

const ConvSolver& winograd() {
  return *find_conv_solver("winograd_f2x3");
}

TuneConfig tiles(int n) {
  return {{{"tiles", n}}};
}

// One 4x4 image, one 3x3 filter, no padding: a single tile. Small integers keep every step of
// G g G^T, B^T d B and A^T m A exact, so the result must equal the sums worked by hand.
TEST(WinogradF2x3, OneTileIsExact) {
  for (DType dt : {DType::f32, DType::f64}) {
    const ConvProblem p{Direction::fwd, 1, 1, 4, 4, 1, 3, 3, 1, 1, 0, 0, 1, dt};
    auto tensor = [dt](const std::vector<double>& values, Shape shape) {
      if (dt == DType::f64) return Tensor::from_vector(values, shape);
      return Tensor::from_vector(std::vector<float>(values.begin(), values.end()), shape);
    };
    std::vector<double> d(16), g(9);
    for (int i = 0; i < 16; ++i) d[i] = i + 1;  // d[y][x] = 4y + x + 1
    for (int i = 0; i < 9; ++i) g[i] = i % 2 == 0 ? i + 1 : -(i + 1);
    ConvArgs args = make_conv_args(p, 1);
    args.src = tensor(d, {1, 1, 4, 4});
    args.wei = tensor(g, {1, 1, 3, 3});
    const Tensor got = run_in_layout({&winograd(), tiles(16)}, p, args, Layout::NCHW);
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x) {
        double want = 0;
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) want += d[(y + i) * 4 + x + j] * g[i * 3 + j];
        const double value =
            dt == DType::f32 ? got.data<float>()[y * 2 + x] : got.data<double>()[y * 2 + x];
        EXPECT_EQ(value, want) << "y" << y << " x" << x << " " << to_string(dt);
      }
  }
}

// Blocks of 16 tiles over images 6 tiles wide: blocks start inside tile rows and span images;
// odd sizes leave half-outside tiles at the right and bottom; padding 0, 1 and 2.
TEST(WinogradF2x3, BlocksCuttingRowsAndImagesMatchTheReference) {
  for (int pad : {0, 1, 2})
    for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
      const int size = 11 - 2 * pad;  // oh 9, ow 11 at every padding: 5 x 6 tiles per image
      const ConvProblem p{dir, 3, 5, size, size + 2, 4, 3, 3, 1, 1, pad, pad, 1, DType::f64};
      ASSERT_TRUE(winograd().applicable(p, nullptr)) << p.key();
      const ConvArgs args = make_conv_args(p, 7);
      const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, args, Layout::NCHW);
      for (int n : {16, 32, 48}) {
        const Tensor got = run_in_layout({&winograd(), tiles(n)}, p, args, Layout::NCHW);
        EXPECT_TRUE(close_relative(got, want, 1e-12)) << "tiles=" << n << " " << p.key();
      }
    }
}

TEST(WinogradF2x3, RepeatedRunsAreBitwiseEqual) {
  const ConvProblem p{Direction::bwd_data, 4, 24, 13, 13, 20, 3, 3, 1, 1, 1, 1, 1};
  const ConvArgs args = make_conv_args(p, 5);
  for (const TuneConfig& config : winograd().configs(p)) {
    const Tensor first = run_in_layout({&winograd(), config}, p, args, Layout::NCHW);
    const Tensor second = run_in_layout({&winograd(), config}, p, args, Layout::NCHW);
    EXPECT_EQ(std::memcmp(first.raw_data(), second.raw_data(), first.nbytes()), 0) << config.str();
  }
}

// [zero row][V][M][U]: V and M are 16 planes of (channels x block tiles), U 16 planes of
// (oc x ic), each plane 64-byte aligned and, from 4 KiB up, a page and a cache line apart.
TEST(WinogradF2x3, WorkspaceFormula) {
  // 9 tiles, one block of 9: zero row 64, V planes 18 -> 32 floats, M planes 27 -> 32,
  // U planes 6 -> 16 floats with the last one unpadded.
  const ConvProblem small{Direction::fwd, 1, 2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1};
  EXPECT_EQ(winograd().workspace_bytes(small, tiles(64)), 64u + 16 * 128 + 16 * 128 + 15 * 64 + 24);
  // 64 tiles of 64 channels: V, M and U planes of 16 KiB each, so 16 KiB + 64 apart.
  const ConvProblem large{Direction::fwd, 1, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1};
  const std::size_t plane = 16384 + 64;
  EXPECT_EQ(winograd().workspace_bytes(large, tiles(64)),
            64u + 16 * plane + 16 * plane + 15 * plane + 16384);
  // bwd_data swaps the roles: V holds oc channels, M ic; the zero row is ow wide.
  const ConvProblem bwd{Direction::bwd_data, 1, 2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1};
  EXPECT_EQ(winograd().workspace_bytes(bwd, tiles(64)), 64u + 16 * 128 + 16 * 128 + 15 * 64 + 24);
}

// Blocks, not the batch, size V and M: 64 images make blocks of exactly 256 tiles, and no batch
// needs more than that.
TEST(WinogradF2x3, WorkspaceDoesNotGrowWithTheBatch) {
  for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
    ConvProblem p{dir, 64, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1};  // 196 tiles per image
    const std::size_t bound = winograd().workspace_bytes(p, tiles(256));
    EXPECT_LT(bound, shape_numel(p.src_shape()) * sizeof(float)) << p.key();
    for (int mb : {1, 8, 100, 512}) {
      p.mb = mb;
      EXPECT_LE(winograd().workspace_bytes(p, tiles(256)), bound) << p.key();
    }
    EXPECT_EQ(winograd().workspace_bytes(p, tiles(256)), bound) << p.key();
  }
}

TEST(WinogradF2x3, ConfigsAreDistinctBlockings) {
  const ConvProblem p{Direction::fwd, 8, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1};
  const std::vector<TuneConfig> configs = winograd().configs(p);
  ASSERT_EQ(configs.size(), 3u);
  std::vector<std::size_t> sizes;
  for (const TuneConfig& c : configs) sizes.push_back(winograd().workspace_bytes(p, c));
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(std::unique(sizes.begin(), sizes.end()), sizes.end());
  // A problem of 4 tiles has one possible blocking, so one config.
  const ConvProblem tiny{Direction::fwd, 1, 2, 4, 4, 2, 3, 3, 1, 1, 1, 1, 1};
  EXPECT_EQ(winograd().configs(tiny).size(), 1u);
}

TEST(WinogradF2x3, RejectsWithTheFailedGuard) {
  const ConvProblem ok{Direction::fwd, 2, 4, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1};
  EXPECT_TRUE(winograd().applicable(ok, nullptr));
  struct Case {
    ConvProblem p;
    const char* word;
  };
  ConvProblem k5 = ok, stride2 = ok, groups2 = ok, pad3 = ok;
  k5.kh = k5.kw = 5;
  stride2.sh = stride2.sw = 2;
  groups2.g = 2;
  pad3.ph = pad3.pw = 3;
  const Case cases[] = {{k5, "3x3"},
                        {stride2, "stride"},
                        {groups2, "groups"},
                        {ok.with_dir(Direction::bwd_weights), "bwd_weights"},
                        {pad3.with_dir(Direction::bwd_data), "padding"}};
  for (const Case& c : cases) {
    std::string why;
    EXPECT_FALSE(winograd().applicable(c.p, &why)) << c.p.key();
    EXPECT_NE(why.find("winograd_f2x3"), std::string::npos) << why;
    EXPECT_NE(why.find(c.word), std::string::npos) << why;
  }
  // Forward needs no such limit: the padding is only zeros around the image.
  EXPECT_TRUE(winograd().applicable(pad3, nullptr));
}

}  // namespace
}  // namespace tunecnn
