#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/allocator.h"
#include "core/cuda_runtime.h"
#include "core/error.h"
#include "core/init.h"
#include "core/module.h"
#include "core/tensor.h"
#include "core/tensor_math.h"
#include "core/variable.h"

namespace tunecnn {
namespace {

TEST(Tensor, ShapeLayoutAndDescribe) {
  Tensor t = Tensor::zeros({2, 3, 4, 5}, DType::f32, Device::cpu, Layout::CHWN);
  EXPECT_EQ(t.numel(), 120);
  EXPECT_EQ(t.nbytes(), 480u);
  EXPECT_EQ(t.layout(), Layout::CHWN);
  EXPECT_EQ(physical_shape(t.shape(), t.layout()), (Shape{3, 4, 5, 2}));
  EXPECT_EQ(t.describe(), "f32[2, 3, 4, 5] CHWN cpu");
  EXPECT_THROW(t.reshape({120}), Error);  // CHWN memory is not row-major NCHW
}

TEST(Tensor, DtypeMismatchIsAnError) {
  Tensor t = Tensor::zeros({4});
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_NO_THROW(t.data<float>());
}

TEST(Tensor, ReshapeSharesStorageCloneDoesNot) {
  Tensor t = Tensor::full({2, 3}, 1.5);
  Tensor r = t.reshape({3, 2});
  Tensor c = t.clone();
  r.data<float>()[0] = 7;
  EXPECT_EQ(t.data<float>()[0], 7);
  EXPECT_EQ(c.data<float>()[0], 1.5);
  EXPECT_THROW(t.reshape({5}), Error);
}

TEST(Tensor, CudaWithoutGpuSaysSo) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present; covered by the CUDA tests";
  try {
    Tensor::empty({4}, DType::f32, Device::cuda);
    FAIL() << "allocating on CUDA without a GPU must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
}

// The tuner's timing arguments: ordinary numbers in the range, spread evenly, the same for a
// seed and different across seeds, in either dtype.
// A network built for a checkpoint's weights draws none of its own: zeros, and the generator
// untouched; outside the guard, drawing resumes.
TEST(NoWeightInitGuard, InitialisersWriteZerosAndDrawNothingWhileItLives) {
  Rng rng(5), fresh(5);
  Tensor w = Tensor::full({64, 9}, 7.0f);
  {
    const NoWeightInitGuard guard;
    kaiming_normal(w, 9, rng);
    for (std::int64_t i = 0; i < w.numel(); ++i) ASSERT_EQ(w.data<float>()[i], 0.0f) << i;
    uniform_fill(w, -1, 1, rng);
  }
  EXPECT_EQ(rng.next_u64(), fresh.next_u64());
  kaiming_normal(w, 9, rng);
  EXPECT_NE(w.data<float>()[0], 0.0f);
}

TEST(HashFill, FillsTheRangeEvenlyAndDependsOnlyOnTheSeed) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor a = Tensor::empty({4096}, dt), b = Tensor::empty({4096}, dt), c = Tensor::empty({4096}, dt);
    hash_fill(a, -1, 1, 7);
    hash_fill(b, -1, 1, 7);
    hash_fill(c, -1, 1, 8);
    const auto value = [dt](const Tensor& t, int i) {
      return dt == DType::f32 ? double(t.data<float>()[i]) : t.data<double>()[i];
    };
    double sum = 0;
    int below_half = 0, same_as_other_seed = 0;
    for (int i = 0; i < 4096; ++i) {
      const double x = value(a, i);
      EXPECT_GE(x, -1);
      EXPECT_LT(x, 1);
      sum += x;
      below_half += x < -0.5;
      same_as_other_seed += x == value(c, i);
    }
    EXPECT_NEAR(sum / 4096, 0, 0.05);
    EXPECT_NEAR(below_half, 1024, 120);  // a quarter of the range holds about a quarter
    EXPECT_LT(same_as_other_seed, 5);
    EXPECT_EQ(max_abs_diff(a, b), 0);
  }
}

// A NaN anywhere is the worst difference, also when finite differences follow it: comparisons
// of a result against its reference must not pass a NaN as close.
TEST(TensorMath, MaxAbsDiffKeepsANaNFollowedByFiniteDifferences) {
  Tensor a = Tensor::zeros({4}), b = Tensor::zeros({4});
  a.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  b.data<float>()[2] = 0.5f;
  EXPECT_TRUE(std::isnan(max_abs_diff(a, b)));
  EXPECT_TRUE(std::isnan(max_abs_diff(b, a)));
  a.data<float>()[0] = 0;
  EXPECT_EQ(max_abs_diff(a, b), 0.5);
}

TEST(Allocator, ReusesFreedBlocksAndTracksPeak) {
  Allocator& alloc = allocator_for(Device::cpu);
  alloc.reset_peak();
  const MemoryStats before = alloc.stats();
  const std::size_t bytes = 3 << 20;
  { Tensor a = Tensor::empty({static_cast<std::int64_t>(bytes / 4)}); }
  const MemoryStats mid = alloc.stats();
  { Tensor b = Tensor::empty({static_cast<std::int64_t>(bytes / 4)}); }
  const MemoryStats after = alloc.stats();
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_GE(mid.peak_bytes, before.current_bytes + bytes);
  EXPECT_EQ(after.system_allocations, mid.system_allocations) << "the second tensor must reuse the block";
  EXPECT_GT(after.reused_allocations, mid.reused_allocations);
}

// An allocator over malloc that counts what it asks of the system, for the cache policies.
class CountingAllocator final : public Allocator {
 public:
  explicit CountingAllocator(bool reuse_larger) : reuse_larger_(reuse_larger) {}
  ~CountingAllocator() override { release_cached(); }
  int system_frees = 0;

 protected:
  void* system_allocate(std::size_t bytes) override { return std::malloc(bytes); }
  void system_free(void* ptr, std::size_t) override {
    ++system_frees;
    std::free(ptr);
  }
  bool reuses_larger_blocks() const override { return reuse_larger_; }

 private:
  bool reuse_larger_;
};

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(Allocator, KeepHoldsEveryFreedBlockAndBoundedHoldsNoMoreThanTheLivePeak) {
  for (const CachePolicy policy : {CachePolicy::keep, CachePolicy::bounded}) {
    CountingAllocator alloc(false);
    alloc.set_cache_policy(policy);
    alloc.deallocate(alloc.allocate(1 * kMiB), 1 * kMiB, MemoryUse::activations);
    void* larger = alloc.allocate(3 * kMiB);  // a miss: the 1 MiB block cannot serve it
    const MemoryStats stats = alloc.stats();
    EXPECT_EQ(stats.current_bytes, 3 * kMiB);
    if (policy == CachePolicy::keep) {
      EXPECT_EQ(stats.cached_bytes, 1 * kMiB);
      EXPECT_EQ(stats.peak_held_bytes, 4 * kMiB);
      EXPECT_EQ(alloc.system_frees, 0);
    } else {
      EXPECT_EQ(stats.cached_bytes, 0u) << "3 MiB live is the peak: the 1 MiB block goes back";
      EXPECT_EQ(stats.peak_held_bytes, 3 * kMiB);
      EXPECT_EQ(alloc.system_frees, 1);
    }
    alloc.deallocate(larger, 3 * kMiB, MemoryUse::activations);
  }
}

// bench memory --max-batch tries a large batch, releases the cache, then tries a smaller one: the
// smaller one must hold no more than its own live peak.
TEST(Allocator, ReleasingTheCacheStartsTheBoundedHighWaterAgain) {
  CountingAllocator alloc(false);
  alloc.set_cache_policy(CachePolicy::bounded);
  alloc.deallocate(alloc.allocate(8 * kMiB), 8 * kMiB, MemoryUse::activations);
  alloc.release_cached();
  void* a = alloc.allocate(2 * kMiB);
  alloc.deallocate(a, 2 * kMiB, MemoryUse::activations);
  void* b = alloc.allocate(3 * kMiB);  // a miss: the 2 MiB block must go, 3 MiB is the live peak now
  EXPECT_EQ(alloc.stats().cached_bytes, 0u);
  alloc.deallocate(b, 3 * kMiB, MemoryUse::activations);
}

// A memory budget: what is not live of it becomes one region, which serves blocks of any size
// from then on without the system, split and merged again; live blocks and the region stay within
// the budget.
TEST(Allocator, UnderALimitOneRegionServesEverySizeWithoutTheSystem) {
  CountingAllocator alloc(true);
  alloc.set_cache_policy(CachePolicy::bounded);
  void* outside = alloc.allocate(2 * kMiB);  // live before the budget: parameters, say
  alloc.deallocate(alloc.allocate(1 * kMiB), 1 * kMiB, MemoryUse::activations);  // cached
  alloc.set_cache_limit(10 * kMiB);
  MemoryStats stats = alloc.stats();
  EXPECT_EQ(stats.cached_bytes, 0u) << "the cache is given back";
  const std::size_t systems = stats.system_allocations;
  for (int step = 0; step < 3; ++step) {  // sizes a step has at different moments, in 8 MiB
    void* a = alloc.allocate(3 * kMiB);    // [0, 3)
    void* b = alloc.allocate(4 * kMiB);    // [3, 7)
    alloc.deallocate(a, 3 * kMiB, MemoryUse::activations);
    void* c = alloc.allocate(2 * kMiB);    // [0, 2): a's range, the smallest that holds it
    void* d = alloc.allocate(1 * kMiB);    // [7, 8): an exact fit
    alloc.deallocate(b, 4 * kMiB, MemoryUse::activations);
    void* e = alloc.allocate(5 * kMiB);    // [2, 7): b's range merged with what c left of a's
    for (auto [p, n] : {std::pair{c, 2 * kMiB}, {d, 1 * kMiB}, {e, 5 * kMiB}})
      alloc.deallocate(p, n, MemoryUse::activations);
  }
  stats = alloc.stats();
  EXPECT_EQ(stats.system_allocations, systems) << "every block came from the region";
  EXPECT_EQ(stats.peak_held_bytes, 10 * kMiB);
  EXPECT_EQ(stats.current_bytes, 2 * kMiB);
  void* over = alloc.allocate(9 * kMiB);  // more than the region: from the system
  EXPECT_EQ(alloc.stats().system_allocations, systems + 1);
  alloc.deallocate(over, 9 * kMiB, MemoryUse::activations);
  // What lives for good stays out of the region (made mid-step, it would split it for good).
  void* state = alloc.allocate(1 * kMiB, MemoryUse::optimizer_state);
  EXPECT_EQ(alloc.stats().system_allocations, systems + 2);
  alloc.deallocate(state, 1 * kMiB, MemoryUse::optimizer_state);
  alloc.deallocate(outside, 2 * kMiB, MemoryUse::parameters);
}

// A block of an earlier limit's region stays valid until freed; the region goes once empty.
TEST(Allocator, TheRegionLeavesRoomForWhatWillLiveForGood) {
  CountingAllocator alloc(false);
  void* parameters = alloc.allocate(2 * kMiB, MemoryUse::parameters);
  alloc.set_cache_limit(10 * kMiB, 3 * kMiB);  // momentum to come
  EXPECT_EQ(alloc.stats().peak_held_bytes, 10 * kMiB - 3 * kMiB) << "2 live and a region of 5";
  void* step = alloc.allocate(5 * kMiB);
  EXPECT_EQ(alloc.stats().system_allocations, 2u) << "the parameters, the region: 5 MiB fit in it";
  alloc.deallocate(step, 5 * kMiB, MemoryUse::activations);
  alloc.release_cached();
  alloc.deallocate(parameters, 2 * kMiB, MemoryUse::parameters);
}

TEST(Allocator, ANewLimitRetiresTheOldRegionOnceItsBlocksAreFreed) {
  CountingAllocator alloc(false);
  alloc.set_cache_limit(4 * kMiB);
  void* kept = alloc.allocate(1 * kMiB);
  const int frees = alloc.system_frees;
  alloc.set_cache_limit(0);
  EXPECT_EQ(alloc.system_frees, frees) << "a block still lives in it";
  alloc.deallocate(kept, 1 * kMiB, MemoryUse::activations);
  alloc.release_cached();
  EXPECT_EQ(alloc.system_frees, frees + 1);
  EXPECT_EQ(alloc.stats().current_bytes, 0u);
}

TEST(Allocator, BoundedGivesBackTheSmallestBlockThatMakesRoom) {
  CountingAllocator alloc(false);
  alloc.set_cache_policy(CachePolicy::bounded);
  void* a = alloc.allocate(4 * kMiB);
  void* b = alloc.allocate(2 * kMiB);
  void* c = alloc.allocate(1 * kMiB);  // live peak 7 MiB
  alloc.deallocate(a, 4 * kMiB, MemoryUse::activations);
  alloc.deallocate(b, 2 * kMiB, MemoryUse::activations);
  alloc.deallocate(c, 1 * kMiB, MemoryUse::activations);
  void* d = alloc.allocate(9 * kMiB / 4);  // needs 9/4 MiB more than the peak allows: the 4 MiB block goes
  MemoryStats stats = alloc.stats();
  EXPECT_EQ(alloc.system_frees, 1);
  EXPECT_EQ(stats.cached_bytes, 3 * kMiB) << "the 2 and 1 MiB blocks stay";
  EXPECT_LE(stats.current_bytes + stats.cached_bytes, 7 * kMiB);
  alloc.deallocate(d, 9 * kMiB / 4, MemoryUse::activations);
}

TEST(Allocator, AMissTakesACachedBlockUpToTwiceItsSizeWhereTheAllocatorAllowsIt) {
  for (const bool reuse_larger : {false, true}) {
    CountingAllocator alloc(reuse_larger);
    alloc.deallocate(alloc.allocate(2 * kMiB), 2 * kMiB, MemoryUse::activations);
    const std::size_t systems_before = alloc.stats().system_allocations;
    void* p = alloc.allocate(3 * kMiB / 2);
    MemoryStats stats = alloc.stats();
    if (reuse_larger) {
      EXPECT_EQ(stats.system_allocations, systems_before) << "the 2 MiB block serves 1.5 MiB";
      EXPECT_EQ(stats.current_bytes, 3 * kMiB / 2) << "counted at the size it asked for";
      EXPECT_EQ(stats.slack_bytes, kMiB / 2) << "what the block holds beyond it";
      EXPECT_EQ(stats.peak_held_bytes, 2 * kMiB);
    } else {
      EXPECT_EQ(stats.system_allocations, systems_before + 1);
      EXPECT_EQ(stats.current_bytes, 3 * kMiB / 2);
    }
    alloc.deallocate(p, 3 * kMiB / 2, MemoryUse::activations);
    stats = alloc.stats();
    EXPECT_EQ(stats.current_bytes, 0u) << "freed at the size it was handed out at";
    EXPECT_EQ(stats.slack_bytes, 0u);
    if (reuse_larger) {
      EXPECT_EQ(stats.cached_bytes, 2 * kMiB);
      void* small = alloc.allocate(kMiB - 4096);  // under half: a block of its own
      EXPECT_EQ(alloc.stats().system_allocations, systems_before + 1);
      for (const MemoryUse exact : {MemoryUse::optimizer_state, MemoryUse::parameters, MemoryUse::workspaces,
                                    MemoryUse::layout_copies}) {
        void* kept = alloc.allocate(3 * kMiB / 2, exact);
        EXPECT_EQ(alloc.stats().current_bytes, (kMiB - 4096) + 3 * kMiB / 2)
            << to_string(exact) << " takes a block of its own size";
        alloc.deallocate(kept, 3 * kMiB / 2, exact);
      }
      alloc.deallocate(small, kMiB - 4096, MemoryUse::activations);
    }
  }
}

TEST(Allocator, CachePolicyNamesParseAndABadOneSaysWhatIsAllowed) {
  EXPECT_EQ(parse_cache_policy("keep"), CachePolicy::keep);
  EXPECT_EQ(parse_cache_policy("bounded"), CachePolicy::bounded);
  try {
    parse_cache_policy("some");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("keep or bounded, not 'some'"), std::string::npos) << e.what();
  }
}

TEST(Autograd, AReleasedRecomputableActivationIsRebuiltWhereItIsReadAgain) {
  Variable kept(Tensor::from_vector(std::vector<double>{1, 2, 3}, {3}));
  kept.release_data();  // not recomputable: nothing happens
  EXPECT_TRUE(kept.data().defined());
  int rebuilds = 0;
  Variable y(Tensor::from_vector(std::vector<double>{4, 5, 6}, {3}));
  y.set_recompute([&] {
    ++rebuilds;
    return Tensor::from_vector(std::vector<double>{4, 5, 6}, {3});
  });
  y.release_data();
  EXPECT_EQ(rebuilds, 0);
  EXPECT_EQ(y.shape(), (Shape{3}));  // read through data(): rebuilt once, then kept
  EXPECT_EQ(y.data().data<double>()[2], 6.0);
  EXPECT_EQ(rebuilds, 1);
}

TEST(Autograd, SharedInputAccumulatesAndNoGradRecordsNothing) {
  // y = x * x elementwise through a hand-written op; dy/dx = 2x, and x is used twice.
  auto square = [](const Variable& x) {
    Tensor out = x.data().clone();
    for (int i = 0; i < out.numel(); ++i) out.data<double>()[i] *= out.data<double>()[i];
    return Variable(out, {x, x}, [](std::vector<Variable>& in, const Tensor& g) {
      for (int k = 0; k < 2; ++k) {
        Tensor gi = g.clone();
        for (int i = 0; i < gi.numel(); ++i) gi.data<double>()[i] *= in[k].data().data<double>()[i];
        in[k].add_grad(gi);
      }
    });
  };
  Variable x(Tensor::from_vector(std::vector<double>{1, -2, 3}, {3}), true);
  square(x).backward(Tensor::full({3}, 1.0, DType::f64));
  EXPECT_DOUBLE_EQ(x.grad().data<double>()[1], -4.0);
  {
    NoGradGuard guard;
    EXPECT_FALSE(square(x).requires_grad());
  }
}

class Affine : public Module {
 public:
  Affine() { w_ = register_parameter("w", Tensor::full({2}, 1.0)); }
  Variable forward(const Variable& x) override { return x; }
  std::string describe() const override { return "Affine"; }
  Variable w_;
};

// Adds one; fuses with an AddOne after it into a single op that adds two.
class AddOne : public Module {
 public:
  int forwards = 0, fused = 0;
  Variable forward(const Variable& x) override {
    ++forwards;
    return Variable(add_scalar(x.data(), 1.0));
  }
  std::optional<Variable> forward_fused(const Variable& x, const Module& next) override {
    if (dynamic_cast<const AddOne*>(&next) == nullptr) return std::nullopt;
    ++fused;
    return Variable(add_scalar(x.data(), 2.0));
  }
  std::string describe() const override { return "AddOne"; }

 private:
  static Tensor add_scalar(const Tensor& x, double c) {
    Tensor y = x.clone();
    for (std::int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] += static_cast<float>(c);
    return y;
  }
};

TEST(Sequential, RunsALayerThatFusesTheNextOneAsOnePairAndTheRestAlone) {
  auto a = std::make_shared<AddOne>(), b = std::make_shared<AddOne>(), c = std::make_shared<AddOne>();
  Sequential net;
  net.add(a).add(b).add(c).add(std::make_shared<Affine>());
  const Variable y = net.forward(Variable(Tensor::zeros({2})));
  EXPECT_EQ(y.data().data<float>()[0], 3.0f);
  EXPECT_EQ(a->fused, 1);  // a and b as one
  EXPECT_EQ(a->forwards + b->forwards + b->fused, 0);
  EXPECT_EQ(c->forwards, 1);  // the next is no AddOne
}

TEST(Module, HierarchicalNamesAndModes) {
  Sequential net;
  net.add(std::make_shared<Affine>(), "first").add(std::make_shared<Affine>());
  auto params = net.parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].first, "first.w");
  EXPECT_EQ(params[1].first, "1.w");
  net.eval();
  EXPECT_FALSE(net.layer(1).is_training());
  EXPECT_EQ(parameter_count(net), 4);
}

}  // namespace
}  // namespace tunecnn
