// CUDA device memory: these run only where a GPU is present and skip cleanly elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "autotune/device_clock.h"
#include "autotune/fingerprint.h"
#include "core/cuda_runtime.h"
#include "core/tensor.h"
#include "core/tensor_math.h"

namespace tunecnn {
namespace {

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_built()) GTEST_SKIP() << "built without CUDA (-DTUNECNN_CUDA=OFF or no nvcc)";
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

TEST_F(Cuda, HostDeviceRoundTripKeepsEveryByte) {
  Tensor host = Tensor::from_vector(std::vector<float>{1.5f, -2, 3e-8f, 4e8f, 0, -0.0f}, {2, 3});
  Tensor device = host.to(Device::cuda);
  EXPECT_EQ(device.device(), Device::cuda);
  EXPECT_THROW(device.data<float>(), Error);  // no host access to device memory
  Tensor back = device.to(Device::cpu);
  EXPECT_EQ(max_abs_diff(back, host), 0.0);
}

TEST_F(Cuda, CachingAllocatorReusesDeviceBlocks) {
  Allocator& alloc = allocator_for(Device::cuda);
  const std::int64_t n = 1 << 20;
  { Tensor a = Tensor::empty({n}, DType::f32, Device::cuda); }
  const MemoryStats mid = alloc.stats();
  { Tensor b = Tensor::empty({n}, DType::f32, Device::cuda); }
  const MemoryStats after = alloc.stats();
  EXPECT_EQ(after.system_allocations, mid.system_allocations);
  EXPECT_GE(after.peak_bytes, static_cast<std::size_t>(n) * 4);
}

// A failed cudaMalloc is also the runtime's last error: the allocator must clear it, or the next
// kernel launch's check reports "out of memory" for a launch that worked.
TEST_F(Cuda, AFailedAllocationLeavesNoErrorForTheNextLaunch) {
  const std::int64_t pebibyte_of_floats = std::int64_t{1} << 48;
  EXPECT_THROW((void)Tensor::empty({pebibyte_of_floats}, DType::f32, Device::cuda), Error);
  Tensor z = Tensor::zeros({1000}, DType::f32, Device::cuda);  // a launch, checked
  EXPECT_EQ(sum(z), 0.0);
}

// The GPU reduction keeps a NaN once it has seen one, in a thread's own stride and in the tree.
TEST_F(Cuda, MaxAbsDiffOnTheGpuKeepsANan) {
  const std::int64_t n = 5000;  // several elements per thread of the one-block reduction
  for (std::int64_t at : {std::int64_t{3}, n - 1}) {
    std::vector<float> a(static_cast<std::size_t>(n), 1.0f);
    a[static_cast<std::size_t>(at)] = std::nanf("");
    const Tensor ga = Tensor::from_vector(a, {n}).to(Device::cuda);
    const Tensor gb = Tensor::zeros({n}, DType::f32, Device::cuda);
    EXPECT_TRUE(std::isnan(max_abs_diff(ga, gb))) << "NaN at " << at;
    EXPECT_FALSE(all_finite(ga)) << "NaN at " << at;
  }
}

// The tuner's GPU clock: events on the compute stream, read after they complete, so an interval
// around queued kernels holds their GPU time and an empty interval holds almost nothing. An empty
// interval on an idle GPU still holds the host's time between the two reads, which a busy host
// stretches: on an H100 with 12 other test processes, one took 1.5 ms, more than the 1.4 ms of the
// fills. So the shortest of several empty intervals is compared, since host delays only add.
TEST_F(Cuda, DeviceClockTimesWorkQueuedOnTheComputeStream) {
  const std::function<double()> clock = device_clock(Device::cuda);
  Tensor big = Tensor::empty({std::int64_t{1} << 26}, DType::f32, Device::cuda);  // 256 MiB
  const double start = clock();
  for (int i = 0; i < 10; ++i) big.fill(i);  // 2.5 GiB of writes, queued asynchronously
  const double after_work = clock();
  double shortest_empty = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 5; ++i) {
    const double before = clock(), after = clock();
    EXPECT_GE(after, before);
    shortest_empty = std::min(shortest_empty, after - before);
  }
  EXPECT_GT(after_work, start);
  EXPECT_LT(shortest_empty, after_work - start);
  EXPECT_LT(after_work - start, 10.0);
}

TEST_F(Cuda, ZerosOnDevice) {
  Tensor z = Tensor::zeros({3, 5}, DType::f64, Device::cuda).to(Device::cpu);
  EXPECT_EQ(max_abs_diff(z, Tensor::full({3, 5}, 0.0, DType::f64)), 0.0);
}

}  // namespace
}  // namespace tunecnn

namespace tunecnn {
namespace {

// Runs everywhere: without a GPU there is no fingerprint, with one every field is filled.
TEST(GpuFingerprint, PresentExactlyWhenAGpuIs) {
  const std::optional<GpuFingerprint> fp = gpu_fingerprint();
  ASSERT_EQ(fp.has_value(), cuda_built() && cuda_device_count() > 0);
  EXPECT_FALSE(gpu_fingerprint(-1).has_value());
  if (!fp) return;
  EXPECT_FALSE(fp->name.empty());
  EXPECT_GT(fp->sm_count, 0);
  EXPECT_GT(fp->memory_bytes, 0);
  for (const auto& [field, value] : fp->fields()) EXPECT_FALSE(value.empty()) << field;
  EXPECT_EQ(device_id(fp->fields(), "cuda").rfind("cuda-", 0), 0u);
}

}  // namespace
}  // namespace tunecnn
