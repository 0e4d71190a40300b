// The fast layout transforms (ops/layout/transform.cpp) against the reference loop, on shapes
// that reach each of their paths: the in-register blocks and their scalar edges, tiles and units
// with remainders on both sides, a side shorter than a block (C = 3 to NHWC), the plain-copy case
// (C = 1 to or from NHWC) and N = 1; every pair of layouts, f32 and f64, into a fresh and a
// preallocated destination, and back again.
#include <gtest/gtest.h>

#include <cstring>

#include "ops/layout/reference.h"
#include "ops/layout/transform.h"

namespace tunecnn {
namespace {

constexpr Layout kAll[] = {Layout::NCHW, Layout::CHWN, Layout::NHWC};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {1, 1, 1, 1},    {2, 1, 5, 7},     {1, 3, 9, 13},   {3, 3, 17, 19},  {130, 5, 3, 3},
      {9, 131, 2, 65}, {17, 40, 12, 12}, {64, 64, 3, 3},  {8, 8, 1, 8},    {33, 1, 16, 9},
      {2, 300, 1, 1},  {1, 7, 20, 20},   {5, 129, 1, 3},  {0, 3, 4, 5},    {4, 3, 0, 5},
  };
  return s;
}

// Distinct values (exact in f32 up to 2^24 elements), so a misplaced element shows.
Tensor numbered(const Shape& shape, DType dtype, Layout layout) {
  Tensor t = Tensor::empty(shape, dtype, Device::cpu, layout);
  dispatch_dtype(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(i);
  });
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

void check_every_pair(DType dtype, const std::vector<Shape>& shape_list) {
  for (const Shape& shape : shape_list)
    for (Layout from : kAll)
      for (Layout to : kAll) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " " + shape_str(shape) + " " +
                     std::string(to_string(from)) + " -> " + std::string(to_string(to)));
        const Tensor src = numbered(shape, dtype, from);
        const Tensor expected = convert_layout_reference(src, to);
        const Tensor fast = convert_layout(src, to);
        ASSERT_EQ(fast.layout(), to);
        ASSERT_TRUE(same_bytes(fast, expected));
        // Into a preallocated destination holding stale values: every element is written.
        Tensor into = Tensor::full(shape, -7, dtype).with_layout(to);
        convert_layout_into(src, into);
        ASSERT_TRUE(same_bytes(into, expected));
        ASSERT_TRUE(same_bytes(convert_layout(fast, from), src));
      }
}

TEST(LayoutTransformPaths, EveryPairBothDtypesMatchesTheReferenceAndRoundTrips) {
  for (DType dtype : {DType::f32, DType::f64}) check_every_pair(dtype, shapes());
}

// Strides that are multiples of 4 KiB (C*H*W = 1024 f32 or 512 f64) take the other block orders;
// N = 8 and 40 on either side of a 32-row unit.
TEST(LayoutTransformPaths, AliasingStridesMatchTheReference) {
  check_every_pair(DType::f32, {{8, 64, 4, 4}, {40, 64, 4, 4}, {8, 1024, 1, 1}});
  check_every_pair(DType::f64, {{8, 32, 4, 4}, {40, 2, 16, 16}});
}

// Above 16 MiB the destination is written with non-temporal stores where its runs start on cache
// lines (NCHW->NHWC, CHWN->NCHW, NHWC->NCHW here; W = 33 leaves partial units).
TEST(LayoutTransformPaths, LargeTensorsMatchTheReference) {
  check_every_pair(DType::f32, {{32, 128, 32, 33}});
  check_every_pair(DType::f64, {{16, 128, 32, 33}});
}

// The naive transform (the baseline `bench layout` and the GPU tests compare against) writes the
// reference's values into the destination's layout.
TEST(LayoutTransformPaths, NaiveIntoWritesTheReference) {
  const Tensor src = numbered({3, 4, 5, 6}, DType::f32, Layout::NHWC);
  for (Layout to : kAll) {
    Tensor into = Tensor::full(src.shape(), -7, DType::f32).with_layout(to);
    convert_layout_naive_into(src, into);
    EXPECT_TRUE(same_bytes(into, convert_layout_reference(src, to))) << to_string(to);
  }
}

TEST(LayoutTransformPaths, IntoChecksShapeAndDtype) {
  const Tensor src = numbered({2, 3, 4, 5}, DType::f32, Layout::NCHW);
  Tensor wrong_shape = Tensor::empty({2, 3, 5, 4}, DType::f32, Device::cpu, Layout::CHWN);
  Tensor wrong_dtype = Tensor::empty({2, 3, 4, 5}, DType::f64, Device::cpu, Layout::CHWN);
  EXPECT_THROW(convert_layout_into(src, wrong_shape), Error);
  EXPECT_THROW(convert_layout_into(src, wrong_dtype), Error);
}

}  // namespace
}  // namespace tunecnn
