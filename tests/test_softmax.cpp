// The softmax cross-entropy solvers (ops/softmax/): both against a plain double-precision
// reference and against each other, on ordinary and extreme logits, one class, and few long rows
// (the fused solver's within-row split, which must give the same bits as its row path), in f32 and
// f64; bad calls rejected with a clear message; the planner the op runs and its replacement; and
// `bench softmax --quick`.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "apps/bench/softmax_bench.h"
#include "core/cuda_runtime.h"
#include "core/error.h"
#include "core/init.h"
#include "core/threading.h"
#include "ops/softmax/fused.h"
#include "ops/softmax/plan.h"
#include "ops/softmax/registry.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/capture.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::values;

template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

Tensor tensor_of(const std::vector<double>& v, int rows, int classes, DType dt) {
  Tensor t = Tensor::empty({rows, classes}, dt);
  dispatch_dtype(dt, [&]<class T>() {
    for (std::size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = static_cast<T>(v[i]);
  });
  return t;
}

// Restores the thread count when a test changes it.
class ThreadsGuard {
 public:
  explicit ThreadsGuard(int threads) : saved_(num_threads()) { set_num_threads(threads); }
  ~ThreadsGuard() { set_num_threads(saved_); }

 private:
  int saved_;
};

struct Reference {
  double loss = 0;
  std::vector<double> grad;
};

// Plain double-precision softmax cross-entropy, one row at a time.
Reference reference(const std::vector<double>& x, const std::vector<std::int32_t>& labels,
                    int classes) {
  const int rows = static_cast<int>(labels.size());
  Reference ref;
  ref.grad.resize(x.size());
  for (int r = 0; r < rows; ++r) {
    const double* row = x.data() + static_cast<std::size_t>(r) * classes;
    double max = row[0], sum = 0;
    for (int c = 1; c < classes; ++c) max = std::max(max, row[c]);
    for (int c = 0; c < classes; ++c) sum += std::exp(row[c] - max);
    ref.loss += max + std::log(sum) - row[labels[r]];
    for (int c = 0; c < classes; ++c)
      ref.grad[static_cast<std::size_t>(r) * classes + c] =
          (std::exp(row[c] - max) / sum - (c == labels[r] ? 1.0 : 0.0)) / rows;
  }
  ref.loss /= rows;
  return ref;
}

struct Case {
  std::string name;
  int rows, classes;
  std::vector<double> logits;
  std::vector<std::int32_t> labels;
};

Case random_case(const std::string& name, int rows, int classes, std::uint64_t seed,
                 double scale = 4) {
  Rng rng(seed);
  Case c{name, rows, classes, {}, {}};
  Tensor t = Tensor::empty({rows, classes}, DType::f64);
  uniform_fill(t, -scale, scale, rng);
  c.logits = values(t);
  for (int r = 0; r < rows; ++r)
    c.labels.push_back(static_cast<std::int32_t>(rng.next_u64() % classes));
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  all.push_back(random_case("random 5x7", 5, 7, 1));
  all.push_back(random_case("random 64x1000", 64, 1000, 2));
  all.push_back(random_case("wide logits 3x300", 3, 300, 3, 60));
  all.push_back({"one class", 4, 1, {3, -1e4, 1e4, 0}, {0, 0, 0, 0}});
  // +-1e4 in one row, all equal, one huge, all -1e4; labels on and off the huge entry.
  all.push_back({"extreme",
                 5,
                 4,
                 {1e4, -1e4, 0, 2, 7, 7, 7, 7, 0, 0, 1e4, 0, -1e4, -1e4, -1e4, -1e4, 0, 1e4, 0, 0},
                 {1, 2, 0, 3, 1}});
  // Few long rows: the fused solver splits rows across threads (checked below).
  all.push_back(random_case("few long rows 3x20000", 3, 20000, 4));
  return all;
}

void expect_matches_reference(const SoftmaxSolver& solver, const Case& c, DType dt) {
  SCOPED_TRACE(std::string(solver.name()) + " on " + c.name + " " + std::string(to_string(dt)));
  // The reference sees the logits as the solver does (rounded to f32 when it runs in f32).
  const Tensor logits = tensor_of(c.logits, c.rows, c.classes, dt);
  const Reference ref = reference(values(logits), c.labels, c.classes);
  Tensor grad = Tensor::full({c.rows, c.classes}, 1234.0, dt);  // overwritten, not accumulated
  const SoftmaxProblem problem{c.rows, c.classes, dt};
  const double loss = run_softmax(solver, problem, logits, c.labels, grad);
  const bool f32 = dt == DType::f32;
  EXPECT_NEAR(loss, ref.loss, (f32 ? 1e-5 : 1e-12) * std::max(1.0, std::abs(ref.loss)));
  const std::vector<double> g = values(grad);
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_TRUE(std::isfinite(g[i])) << "element " << i;
    if (std::abs(g[i] - ref.grad[i]) > worst) worst = std::abs(g[i] - ref.grad[i]), at = i;
  }
  EXPECT_LE(worst, (f32 ? 2e-6 : 1e-14) / c.rows)
      << "element " << at << ": " << g[at] << " vs " << ref.grad[at];
}

TEST(SoftmaxProblem, KeyAndValidation) {
  EXPECT_EQ((SoftmaxProblem{64, 10}).key(), "softmax_xent mb64 classes10");
  EXPECT_EQ((SoftmaxProblem{128, 1000, DType::f64}).key(), "softmax_xent mb128 classes1000 f64");
  EXPECT_EQ((SoftmaxProblem{2, 3}), (SoftmaxProblem{2, 3, DType::f32}));
  EXPECT_NE((SoftmaxProblem{2, 3}), (SoftmaxProblem{2, 3, DType::f64}));
  EXPECT_NO_THROW((SoftmaxProblem{1, 1}).validate());
  const std::string msg = error_of([] { SoftmaxProblem{0, 10}.validate(); });
  EXPECT_NE(msg.find("softmax_xent mb0 classes10"), std::string::npos) << msg;
  EXPECT_THROW((SoftmaxProblem{4, 0}).validate(), Error);
}

TEST(SoftmaxRegistry, FusedFirstFivePassSecond) {
  const auto solvers = cpu_softmax_solvers();
  ASSERT_EQ(solvers.size(), 2u);
  EXPECT_EQ(solvers[0]->name(), "softmax_fused");
  EXPECT_EQ(solvers[1]->name(), "softmax_five_pass");
  EXPECT_EQ(find_softmax_solver("softmax_five_pass"), solvers[1]);
  EXPECT_EQ(find_softmax_solver("softmax_cudnn"), nullptr);
  for (const SoftmaxSolver* s : solvers) {
    std::string why;
    EXPECT_TRUE(s->applicable({1, 1}, &why)) << why;
    EXPECT_FALSE(s->applicable({0, 1}, &why));
    EXPECT_FALSE(why.empty());
  }
}

TEST(SoftmaxSolvers, MatchThePlainDoubleReference) {
  ThreadsGuard threads(2);
  for (const Case& c : cases())
    for (DType dt : {DType::f32, DType::f64})
      for (const SoftmaxSolver* solver : cpu_softmax_solvers())
        expect_matches_reference(*solver, c, dt);
}

TEST(SoftmaxSolvers, AgreeWithEachOther) {
  for (DType dt : {DType::f32, DType::f64}) {
    const Case c = random_case("random 32x10000", 32, 10000, 7, 10);
    const Tensor logits = tensor_of(c.logits, c.rows, c.classes, dt);
    const SoftmaxProblem problem{c.rows, c.classes, dt};
    Tensor g_fused = Tensor::empty_like(logits), g_five = Tensor::empty_like(logits);
    const double l_fused =
        run_softmax(*cpu_softmax_solvers()[0], problem, logits, c.labels, g_fused);
    const double l_five = run_softmax(*cpu_softmax_solvers()[1], problem, logits, c.labels, g_five);
    EXPECT_NEAR(l_fused, l_five, dt == DType::f32 ? 1e-5 : 1e-13);
    const std::vector<double> a = values(g_fused), b = values(g_five);
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], dt == DType::f32 ? 1e-8 : 1e-16) << to_string(dt) << " element " << i;
  }
}

// The within-row split is taken for few long rows only, and gives the same bits as the row path
// (fixed chunks, partials combined in chunk order), whatever the thread count.
TEST(SoftmaxFused, WithinRowSplitIsTakenAndBitIdenticalToTheRowPath) {
  const SoftmaxProblem few_long{3, 20000}, many_long{64, 20000}, few_short{3, 1000};
  EXPECT_TRUE(fused_softmax_splits_rows(few_long, 2));
  EXPECT_FALSE(fused_softmax_splits_rows(few_long, 1));
  EXPECT_FALSE(fused_softmax_splits_rows(many_long, 2));
  EXPECT_FALSE(fused_softmax_splits_rows(few_short, 2));
  EXPECT_TRUE(fused_softmax_splits_rows({1, kFusedSplitMinClasses}, 1));
  const SoftmaxSolver& fused = *find_softmax_solver("softmax_fused");
  for (DType dt : {DType::f32, DType::f64}) {
    const Case c = random_case("split", 3, 20000, 11, 30);
    const Tensor logits = tensor_of(c.logits, c.rows, c.classes, dt);
    const SoftmaxProblem p{c.rows, c.classes, dt};
    Tensor row_path = Tensor::empty_like(logits), split_path = Tensor::empty_like(logits);
    double row_loss = 0, split_loss = 0;
    {
      ThreadsGuard one(1);
      row_loss = fused.run(p, logits, c.labels, row_path);
    }
    for (int repeat = 0; repeat < 3; ++repeat) {
      ThreadsGuard two(2);
      split_loss = fused.run(p, logits, c.labels, split_path);
      EXPECT_EQ(split_loss, row_loss) << to_string(dt);
      EXPECT_EQ(values(split_path), values(row_path)) << to_string(dt);
    }
  }
}

TEST(SoftmaxSolvers, RejectBadCallsClearly) {
  const Tensor logits = Tensor::zeros({3, 4});
  for (const SoftmaxSolver* s : cpu_softmax_solvers()) {
    SCOPED_TRACE(std::string(s->name()));
    const SoftmaxProblem p{3, 4};
    Tensor grad = Tensor::empty({3, 4});
    const std::string bad_label = error_of([&] { s->run(p, logits, {0, 1, 4}, grad); });
    EXPECT_NE(bad_label.find("label 4 in row 2 is outside [0, 4)"), std::string::npos)
        << bad_label;
    const std::string negative = error_of([&] { s->run(p, logits, {0, -1, 2}, grad); });
    EXPECT_NE(negative.find("label -1 in row 1"), std::string::npos) << negative;
    const std::string count = error_of([&] { s->run(p, logits, {0, 1}, grad); });
    EXPECT_NE(count.find("2 labels for logits [3, 4]"), std::string::npos) << count;
    Tensor wrong_grad = Tensor::empty({3, 5});
    const std::string grad_shape = error_of([&] { s->run(p, logits, {0, 1, 2}, wrong_grad); });
    EXPECT_NE(grad_shape.find("gradient"), std::string::npos) << grad_shape;
    Tensor f64_grad = Tensor::empty({3, 4}, DType::f64);
    EXPECT_THROW(s->run(p, logits, {0, 1, 2}, f64_grad), Error);
    const std::string mismatch = error_of([&] { s->run({2, 4}, logits, {0, 1}, grad); });
    EXPECT_NE(mismatch.find("softmax_xent mb2 classes4"), std::string::npos) << mismatch;
  }
  const std::string not_2d = error_of([] {
    Tensor g = Tensor::empty({3, 4, 1});
    softmax_cross_entropy_forward(Tensor::zeros({3, 4, 1}), {0, 1, 2}, g);
  });
  EXPECT_NE(not_2d.find("[3, 4, 1]"), std::string::npos) << not_2d;
}

// A planner that records what it was asked and answers with the five-pass solver.
class RecordingPlanner final : public SoftmaxPlanner {
 public:
  std::vector<std::string> keys;
  const SoftmaxSolver& plan(const SoftmaxProblem& problem) override {
    keys.push_back(problem.key());
    return *find_softmax_solver("softmax_five_pass");
  }
};

TEST(SoftmaxPlanner, DefaultIsFusedAndTheOpRunsTheOneItIsGiven) {
  EXPECT_EQ(FirstApplicableSoftmaxPlanner().plan({64, 10}).name(), "softmax_fused");
  EXPECT_EQ(FirstApplicableSoftmaxPlanner().plan({8, 100, DType::f64}).name(), "softmax_fused");

  const Case c = random_case("planned", 6, 50, 5);
  const Tensor logits = tensor_of(c.logits, c.rows, c.classes, DType::f32);
  Tensor expected = Tensor::empty_like(logits), got = Tensor::empty_like(logits);
  const double expected_loss = find_softmax_solver("softmax_five_pass")
                                   ->run({c.rows, c.classes}, logits, c.labels, expected);
  RecordingPlanner recording;
  const double loss = softmax_cross_entropy_forward(logits, c.labels, got, recording);
  Variable x(logits.clone(), true);
  softmax_cross_entropy(x, c.labels, recording).backward();
  const Tensor op_grad = x.grad();
  EXPECT_EQ(recording.keys,
            (std::vector<std::string>{"softmax_xent mb6 classes50", "softmax_xent mb6 classes50"}));
  EXPECT_EQ(loss, expected_loss);
  EXPECT_EQ(values(got), values(expected));
  EXPECT_EQ(values(op_grad), values(expected));  // the backward of the mean loss, dy = 1
}

TEST(SoftmaxOp, EmptyBatchGivesZeroWithoutAPlan) {
  Tensor grad = Tensor::empty({0, 5});
  EXPECT_EQ(softmax_cross_entropy_forward(Tensor::empty({0, 5}), {}, grad), 0.0);
  EXPECT_THROW(softmax_cross_entropy_forward(Tensor::empty({0, 5}), {1}, grad), Error);
}

TEST(BenchSoftmax, QuickRunPrintsTheTable) {
  ThreadsGuard threads(num_threads());  // the bench sets its own thread count
  std::string out;
  const int rc = tunecnn::testing::run_capturing_stdout(bench_softmax, "softmax",
                                                        {"--quick", "--threads", "2"}, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.rfind("# ", 0), 0u) << out;
  for (const char* column :
       {"batch", "classes", "fused_ms", "five_pass_ms", "fused_GBps", "five_pass_GBps", "ratio"})
    EXPECT_NE(out.find(column), std::string::npos) << column << "\n" << out;
  // One row per batch x class count: "     8       10 ..." and "     8     1000 ...".
  EXPECT_NE(out.find("     8       10 "), std::string::npos) << out;
  EXPECT_NE(out.find("     8     1000 "), std::string::npos) << out;
}

// Li et al. Fig. 13 on the GPU: the same table from the GPU's kernels; without a GPU, an error
// that says so before any work.
TEST(BenchSoftmax, OnTheGpuOrAClearErrorWithoutOne) {
  ThreadsGuard threads(num_threads());
  std::string out;
  if (cuda_device_count() == 0) {
    testing::expect_error(
        [&] {
          tunecnn::testing::run_capturing_stdout(bench_softmax, "softmax", {"--quick", "--device", "cuda"}, &out);
        },
        {"GPU"});
    EXPECT_EQ(out, "");
    return;
  }
  const int rc = tunecnn::testing::run_capturing_stdout(bench_softmax, "softmax", {"--quick", "--device", "cuda"}, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("device cuda"), std::string::npos) << out;
  EXPECT_NE(out.find("     8     1000 "), std::string::npos) << out;
}

TEST(BenchSoftmax, RejectsBadOptions) {
  ThreadsGuard threads(num_threads());
  for (std::vector<const char*> args :
       {std::vector<const char*>{"softmax", "--batches", "0"},
        std::vector<const char*>{"softmax", "--classes", "10,x"},
        std::vector<const char*>{"softmax", "--dtype", "f16"},
        std::vector<const char*>{"softmax", "--rounds", "0"},
        std::vector<const char*>{"softmax", "--device", "tpu"}})
    EXPECT_THROW(bench_softmax(static_cast<int>(args.size()), args.data()), Error) << args[1];
}

}  // namespace
}  // namespace tunecnn
