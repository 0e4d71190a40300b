// The single-process half of data-parallel training's tests: the backward hook that says when a
// parameter's gradient is final (core/variable.h), and the bucketed gradient allreduce
// (core/gradient_allreduce.h) driven through a fake two-rank communicator that plays the other
// rank. The runs under mpirun with real processes are tested elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/error.h"
#include "core/gradient_allreduce.h"
#include "core/module.h"
#include "core/rng.h"
#include "core/tensor_math.h"
#include "core/variable.h"
#include "ops/linear.h"
#include "ops/relu.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::expect_error;
using testing::values;

constexpr int kInputs = 6;

// `count` rows of random inputs [count, kInputs] and labels among 3 classes.
struct Examples {
  Tensor x;
  std::vector<std::int32_t> labels;
};

Examples make_examples(std::int64_t count, std::uint64_t seed) {
  Rng rng(seed);
  Examples e{testing::random_tensor({count, kInputs}, rng), {}};
  for (std::int64_t i = 0; i < count; ++i) e.labels.push_back(static_cast<std::int32_t>(i % 3));
  return e;
}

// Rows [begin, end) of a batch: one rank's share of it.
Examples rows(const Examples& all, std::int64_t begin, std::int64_t end) {
  const float* x = all.x.data<float>();
  std::vector<float> part(x + begin * kInputs, x + end * kInputs);
  return {Tensor::from_vector(part, {end - begin, kInputs}),
          {all.labels.begin() + begin, all.labels.begin() + end}};
}

// ---- Variable::backward's gradient-ready hook ----

struct HookRecord {
  std::vector<const void*> order;                 // ids, in the order the hook fired
  std::map<const void*, Tensor> grad_when_fired;  // a copy taken inside the hook
};

Variable::GradReadyFn recorder(HookRecord& record) {
  return [&record](const Variable& leaf) {
    record.order.push_back(leaf.id());
    record.grad_when_fired[leaf.id()] = leaf.has_grad() ? leaf.grad().clone() : Tensor();
  };
}

// Every gradient the hook copied equals the parameter's gradient after backward returned.
void expect_grads_final_when_fired(const HookRecord& record, const std::vector<Variable>& params) {
  for (const Variable& p : params) {
    const auto it = record.grad_when_fired.find(p.id());
    ASSERT_NE(it, record.grad_when_fired.end());
    ASSERT_TRUE(it->second.defined() && p.has_grad());
    EXPECT_EQ(values(it->second), values(p.grad()));
  }
}

std::size_t position(const HookRecord& record, const Variable& v) {
  return static_cast<std::size_t>(std::find(record.order.begin(), record.order.end(), v.id()) -
                                  record.order.begin());
}

TEST(VariableHook, FiresOncePerParameterWithItsFinalGradientLastLayerFirst) {
  Rng rng(3);
  const Variable w1(testing::random_tensor({5, kInputs}, rng), true);
  const Variable b1(testing::random_tensor({5}, rng), true);
  const Variable w2(testing::random_tensor({3, 5}, rng), true);
  const Variable frozen_b2(testing::random_tensor({3}, rng), false);  // no gradient, no hook
  const Examples batch = make_examples(4, 1);
  const Variable input(batch.x);  // data, not a parameter
  Variable loss =
      softmax_cross_entropy(linear(relu(linear(input, w1, b1)), w2, frozen_b2), batch.labels);
  HookRecord record;
  loss.backward(recorder(record));

  // Exactly the three trainable leaves, once each: no intermediate result, input or frozen bias.
  ASSERT_EQ(record.order.size(), 3u);
  EXPECT_EQ(std::set<const void*>(record.order.begin(), record.order.end()),
            (std::set<const void*>{w1.id(), b1.id(), w2.id()}));
  expect_grads_final_when_fired(record, {w1, b1, w2});
  // Backward reaches the last layer first: data-parallel training reduces its bucket first.
  EXPECT_LT(position(record, w2), position(record, w1));
  EXPECT_LT(position(record, w2), position(record, b1));
}

// a + b through a hand-written op: each input receives the output's gradient.
Variable plus(const Variable& a, const Variable& b) {
  return Variable(add(a.data(), b.data()), {a, b}, [](std::vector<Variable>& in, const Tensor& g) {
    in[0].add_grad(g.clone());
    in[1].add_grad(g.clone());
  });
}

TEST(VariableHook, SharedWeightFiresOnceAfterBothUses) {
  Rng rng(5);
  const Tensor weight = testing::random_tensor({3, kInputs}, rng);
  const Examples x = make_examples(4, 2), z = make_examples(4, 3);
  const Variable no_bias;

  // y = w x + w z, the same w twice.
  const Variable w(weight.clone(), true);
  HookRecord record;
  softmax_cross_entropy(plus(linear(Variable(x.x), w, no_bias), linear(Variable(z.x), w, no_bias)),
                        x.labels)
      .backward(recorder(record));
  ASSERT_EQ(record.order.size(), 1u);
  expect_grads_final_when_fired(record, {w});

  // The same graph with two separate copies of w: the shared gradient is the sum of theirs, so
  // the hook saw both uses, not the first alone.
  const Variable wx(weight.clone(), true), wz(weight.clone(), true);
  softmax_cross_entropy(
      plus(linear(Variable(x.x), wx, no_bias), linear(Variable(z.x), wz, no_bias)), x.labels)
      .backward();
  EXPECT_LT(max_abs_diff(record.grad_when_fired.at(w.id()), add(wx.grad(), wz.grad())), 1e-6);
  EXPECT_GT(max_abs_diff(wx.grad(), wz.grad()), 1e-3)
      << "the two uses must differ to tell them apart";

  // y = w (w x): the second use is deeper in the graph than the first.
  const Tensor square = testing::random_tensor({kInputs, kInputs}, rng);
  const Variable chained(square, true);
  HookRecord chain;
  softmax_cross_entropy(linear(linear(Variable(x.x), chained, no_bias), chained, no_bias),
                        {0, 1, 2, 3})
      .backward(recorder(chain));
  ASSERT_EQ(chain.order.size(), 1u);
  expect_grads_final_when_fired(chain, {chained});
}

// ---- GradientAllreduce over a fake communicator ----

// Rank 0 of two. Records every non-blocking allreduce in order with the buffer as it was sent;
// wait_all completes them by adding rank 1's contribution, other(bucket, count), where `bucket`
// counts the allreduces of this step. Checks that nothing writes a buffer between its start and
// wait_all, as MPI requires. The blocking collectives are not GradientAllreduce's business.
class FakeTwoRanks final : public Communicator {
 public:
  using OtherRank = std::function<std::vector<float>(std::size_t bucket, std::size_t count)>;
  struct Started {
    float* data;
    std::size_t count;
    std::vector<float> sent;  // the buffer when the allreduce started
  };

  std::vector<Started> started;  // over all steps
  int waits = 0;
  OtherRank other;  // none: rank 1 adds nothing

  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 2; }
  std::string host() const override { return "fake"; }

  RequestId start_allreduce_sum(float* data, std::size_t count) override {
    started.push_back({data, count, std::vector<float>(data, data + count)});
    return static_cast<RequestId>(started.size() - 1);
  }
  void progress() override {}
  void wait_all(const char*) override {
    for (std::size_t r = completed_; r < started.size(); ++r) {
      Started& s = started[r];
      EXPECT_EQ(std::vector<float>(s.data, s.data + s.count), s.sent)
          << "allreduce " << r << " was written to before wait_all";
      if (!other) continue;
      const std::vector<float> theirs = other(r - completed_, s.count);
      ASSERT_EQ(theirs.size(), s.count);
      for (std::size_t k = 0; k < s.count; ++k) s.data[k] += theirs[k];
    }
    completed_ = started.size();
    ++waits;
  }
  // This rank's contributions to the last step's allreduces, in order.
  std::vector<std::vector<float>> last_step_sent(std::size_t buckets) const {
    std::vector<std::vector<float>> sent;
    for (std::size_t r = started.size() - buckets; r < started.size(); ++r)
      sent.push_back(started[r].sent);
    return sent;
  }

  void allreduce_sum(float*, std::size_t, const char* what) override { unexpected(what); }
  void allreduce_sum(double*, std::size_t, const char* what) override { unexpected(what); }
  void allreduce_max(double*, std::size_t, const char* what) override { unexpected(what); }
  void broadcast(std::string&, int, const char* what) override { unexpected(what); }
  std::vector<std::string> gather(const std::string&, const char* what) override {
    unexpected(what);
    return {};
  }
  void barrier(const char* what) override { unexpected(what); }
  [[noreturn]] void abort(const std::string& message) override { throw Error("abort: " + message); }

 private:
  std::size_t completed_ = 0;

  static void unexpected(const char* what) {
    ADD_FAILURE() << "GradientAllreduce used the blocking collective '" << what << "'";
  }
};

// Rank 1's part of bucket `bucket`: distinct values at every position, so a gradient copied back
// from the wrong bucket or offset shows.
std::vector<float> ramp(std::size_t bucket, std::size_t count) {
  std::vector<float> out(count);
  for (std::size_t k = 0; k < count; ++k)
    out[k] = 0.25f * static_cast<float>(bucket + 1) + 0.001f * static_cast<float>(k);
  return out;
}

// Parameters of the given sizes, registered in order; forward passes its input through, so
// inside a network its parameters get no gradient (unused parameters).
class Blob : public Module {
 public:
  explicit Blob(const std::vector<std::pair<std::string, std::int64_t>>& sizes,
                DType dtype = DType::f32) {
    for (const auto& [name, n] : sizes) register_parameter(name, Tensor::full({n}, 0.5, dtype));
  }
  Variable forward(const Variable& x) override { return x; }
  std::string describe() const override { return "Blob"; }
};

// Linear(6->5), [a layer with an unused 3-element parameter], ReLU, Linear(5->3).
std::shared_ptr<Sequential> small_net(bool with_unused_parameter, std::uint64_t seed = 11) {
  Rng rng(seed);
  auto net = std::make_shared<Sequential>();
  net->add(std::make_shared<Linear>(kInputs, 5, rng));
  if (with_unused_parameter)
    net->add(
        std::make_shared<Blob>(std::vector<std::pair<std::string, std::int64_t>>{{"unused", 3}}));
  net->add(std::make_shared<ReLU>()).add(std::make_shared<Linear>(5, 3, rng));
  return net;
}

void zero_grads(const Module& net) {
  for (auto& [name, p] : net.parameters()) Variable(p).zero_grad();
}

Variable loss_on(Module& net, const Examples& e) {
  return softmax_cross_entropy(net(Variable(e.x)), e.labels);
}

// Gradients by parameter name; a parameter without one counts as zeros.
std::map<std::string, std::vector<double>> gradients(const Module& net) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, p] : net.parameters())
    out[name] = p.has_grad() ? values(p.grad()) : std::vector<double>(p.data().numel(), 0.0);
  return out;
}

std::map<std::string, std::size_t> parameter_sizes(const Module& net) {
  std::map<std::string, std::size_t> sizes;
  for (const auto& [name, p] : net.parameters())
    sizes[name] = static_cast<std::size_t>(p.data().numel());
  return sizes;
}

// Each parameter's [bucket, offset] in the reduced buffers: a bucket holds its parameters one
// after another in bucket_layout() order, on every rank alike.
struct Slot {
  std::size_t bucket, offset;
};
std::map<std::string, Slot> slots(const GradientAllreduce& reduce, const Module& net) {
  const auto sizes = parameter_sizes(net);
  std::map<std::string, Slot> out;
  const auto layout = reduce.bucket_layout();
  for (std::size_t b = 0; b < layout.size(); ++b) {
    std::size_t offset = 0;
    for (const std::string& name : layout[b]) {
      out[name] = {b, offset};
      offset += sizes.at(name);
    }
  }
  return out;
}

std::vector<std::size_t> bucket_floats(const GradientAllreduce& reduce, const Module& net) {
  const auto sizes = parameter_sizes(net);
  std::vector<std::size_t> out;
  for (const auto& bucket : reduce.bucket_layout()) {
    out.push_back(0);
    for (const std::string& name : bucket) out.back() += sizes.at(name);
  }
  return out;
}

using BucketNames = std::vector<std::vector<std::string>>;

TEST(GradientAllreduce, BucketsFillFromTheLastParameterWithinTheByteBudget) {
  // Registration order; backward finishes them from the end. Buckets of 64 floats.
  const Blob blob({{"a", 10}, {"big1", 300}, {"c", 19}, {"d", 40}, {"e", 5}, {"big2", 100}});
  GradientAllreduce reduce(blob.parameters(), std::make_shared<FakeTwoRanks>(), 64 * sizeof(float));
  // big2 alone (larger than a bucket); e + d + c fill 64 floats exactly; big1 alone; a after it.
  EXPECT_EQ(reduce.bucket_layout(), (BucketNames{{"big2"}, {"e", "d", "c"}, {"big1"}, {"a"}}));
  EXPECT_EQ(reduce.stats().buckets, 4u);
  EXPECT_EQ(reduce.stats().bytes_per_step, 4u * (10 + 300 + 19 + 40 + 5 + 100));
  EXPECT_EQ(reduce.stats().steps, 0);

  GradientAllreduce one_big(blob.parameters(), std::make_shared<FakeTwoRanks>());
  EXPECT_EQ(one_big.bucket_layout(), (BucketNames{{"big2", "e", "d", "c", "big1", "a"}}));
}

TEST(GradientAllreduce, RejectsF64ParametersAndAMissingCommunicator) {
  const Blob doubles({{"w", 4}}, DType::f64);
  expect_error([&] { GradientAllreduce(doubles.parameters(), std::make_shared<FakeTwoRanks>()); },
               {"f32", "w is f64"});
  const Blob blob({{"w", 4}});
  expect_error([&] { GradientAllreduce(blob.parameters(), nullptr); }, {"communicator"});
}

// Runs one step of `reduce` on `net` over `local` examples of `global`, with the hook, and returns
// how many allreduces had started after each hook call and just before finish().
struct StepTrace {
  std::vector<std::string> ready;          // parameter names, in hook order
  std::vector<std::size_t> started_after;  // allreduces started after each hook call
  std::size_t started_before_finish = 0;
};

StepTrace run_step(GradientAllreduce& reduce, const FakeTwoRanks& comm, Module& net,
                   const Examples& local, std::int64_t global) {
  std::map<const void*, std::string> names;
  for (const auto& [name, p] : net.parameters()) names[p.id()] = name;
  const std::size_t before = comm.started.size();
  StepTrace trace;
  zero_grads(net);
  reduce.begin_step(local.x.dim(0), global);
  if (local.x.dim(0) > 0) {
    loss_on(net, local).backward([&](const Variable& p) {
      reduce.on_gradient_ready(p);
      trace.ready.push_back(names.at(p.id()));
      trace.started_after.push_back(comm.started.size() - before);
    });
  }
  trace.started_before_finish = comm.started.size() - before;
  reduce.finish();
  return trace;
}

// How many buckets, taken in index order, have every parameter among `ready`.
std::size_t complete_prefix(const BucketNames& layout, const std::vector<std::string>& ready) {
  std::size_t n = 0;
  while (n < layout.size() &&
         std::all_of(layout[n].begin(), layout[n].end(), [&](const auto& name) {
           return std::find(ready.begin(), ready.end(), name) != ready.end();
         }))
    ++n;
  return n;
}

void expect_started_as_soon_as_complete(const StepTrace& trace, const BucketNames& layout) {
  for (std::size_t i = 0; i < trace.ready.size(); ++i) {
    const std::vector<std::string> so_far(trace.ready.begin(), trace.ready.begin() + i + 1);
    EXPECT_EQ(trace.started_after[i], complete_prefix(layout, so_far))
        << "after the hook for " << trace.ready[i];
  }
}

TEST(GradientAllreduce, EachBucketStartsDuringBackwardOnceComplete) {
  auto net = small_net(false);
  auto comm = std::make_shared<FakeTwoRanks>();
  // 0.weight 30, 0.bias 5, 2.weight 15, 2.bias 3 floats; buckets of 20 floats.
  GradientAllreduce reduce(net->parameters(), comm, 20 * sizeof(float));
  const BucketNames layout = reduce.bucket_layout();
  ASSERT_EQ(layout, (BucketNames{{"2.bias", "2.weight"}, {"0.bias"}, {"0.weight"}}));

  const StepTrace trace = run_step(reduce, *comm, *net, make_examples(4, 1), 4);
  ASSERT_EQ(trace.ready.size(), 4u);
  expect_started_as_soon_as_complete(trace, layout);
  EXPECT_EQ(trace.started_before_finish, 3u) << "backward completes every bucket";
  ASSERT_EQ(comm->started.size(), 3u);  // finish() starts none twice
  const std::vector<std::size_t> sizes = bucket_floats(reduce, *net);
  for (std::size_t b = 0; b < 3; ++b) EXPECT_EQ(comm->started[b].count, sizes[b]) << "bucket " << b;
  EXPECT_EQ(comm->waits, 1);
  EXPECT_EQ(reduce.stats().steps, 1);
}

TEST(GradientAllreduce, ResultIsTheScaledOwnGradientPlusTheOtherRanks) {
  auto net = small_net(false);
  auto comm = std::make_shared<FakeTwoRanks>();
  comm->other = ramp;
  GradientAllreduce reduce(net->parameters(), comm, 20 * sizeof(float));
  const Examples local = make_examples(3, 4);

  // This rank's own local-mean gradients, from a plain backward pass on the same examples.
  zero_grads(*net);
  loss_on(*net, local).backward();
  const auto own = gradients(*net);

  run_step(reduce, *comm, *net, local, 5);  // 3 of 5 examples: weight 0.6
  const auto reduced = gradients(*net);
  const auto where = slots(reduce, *net);
  for (const auto& [name, g] : own) {
    const Slot slot = where.at(name);
    const std::vector<float> theirs = ramp(slot.bucket, slot.offset + g.size());
    ASSERT_EQ(reduced.at(name).size(), g.size());
    for (std::size_t k = 0; k < g.size(); ++k)
      EXPECT_NEAR(reduced.at(name)[k], 0.6 * g[k] + theirs[slot.offset + k], 1e-6)
          << name << "[" << k << "]";
  }
}

TEST(GradientAllreduce, UnusedParameterContributesZerosAndHoldsBackLaterBuckets) {
  auto net = small_net(true);
  auto comm = std::make_shared<FakeTwoRanks>();
  comm->other = ramp;
  GradientAllreduce reduce(net->parameters(), comm, 20 * sizeof(float));
  const BucketNames layout = reduce.bucket_layout();
  ASSERT_EQ(layout, (BucketNames{{"3.bias", "3.weight"}, {"1.unused", "0.bias"}, {"0.weight"}}));

  const StepTrace trace = run_step(reduce, *comm, *net, make_examples(4, 1), 4);
  EXPECT_EQ(std::count(trace.ready.begin(), trace.ready.end(), "1.unused"), 0);
  expect_started_as_soon_as_complete(trace, layout);
  // The unused parameter's bucket completes only in finish(), and buckets start in index order
  // (every rank must start the same allreduces in the same order), so 0.weight waits too.
  EXPECT_EQ(trace.started_before_finish, 1u);
  ASSERT_EQ(comm->started.size(), 3u);

  const Slot slot = slots(reduce, *net).at("1.unused");
  const std::vector<float> theirs = ramp(slot.bucket, slot.offset + 3);
  const auto reduced = gradients(*net);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(comm->started[slot.bucket].sent[slot.offset + k], 0.0f);
    EXPECT_FLOAT_EQ(reduced.at("1.unused")[k], theirs[slot.offset + k]);
  }
}

TEST(GradientAllreduce, StepWithoutLocalExamplesContributesZeros) {
  auto net = small_net(false);
  auto comm = std::make_shared<FakeTwoRanks>();
  comm->other = ramp;
  GradientAllreduce reduce(net->parameters(), comm, 20 * sizeof(float));
  run_step(reduce, *comm, *net, make_examples(4, 1), 4);  // leaves gradients behind

  // The last, short batch gave this rank nothing: begin_step and finish only.
  reduce.begin_step(0, 3);
  reduce.finish();
  EXPECT_EQ(reduce.stats().steps, 2);
  ASSERT_EQ(comm->started.size(), 6u);
  for (std::size_t r = 3; r < 6; ++r)
    EXPECT_EQ(comm->started[r].sent, std::vector<float>(comm->started[r].count, 0.0f))
        << "bucket " << r - 3;
  const auto where = slots(reduce, *net);
  for (const auto& [name, g] : gradients(*net)) {
    const Slot slot = where.at(name);
    const std::vector<float> theirs = ramp(slot.bucket, slot.offset + g.size());
    for (std::size_t k = 0; k < g.size(); ++k)
      EXPECT_FLOAT_EQ(g[k], theirs[slot.offset + k]) << name;
  }
}

// Rank 0 takes examples [0, split) of a global batch, rank 1 the rest. Each rank's allreduce is
// run here in turn: rank 1 first (its fake records what it sends), then rank 0 with rank 1's
// buffers as the other contribution, then rank 1 again with rank 0's. Both must end with the
// gradient one process computes on the whole batch.
void expect_ranks_match_whole_batch(std::int64_t global, std::int64_t split) {
  SCOPED_TRACE("rank 0 has " + std::to_string(split) + " of " + std::to_string(global));
  auto net = small_net(false, 21);
  const Examples all = make_examples(global, 7);
  zero_grads(*net);
  loss_on(*net, all).backward();
  const auto whole = gradients(*net);

  const Examples shares[2] = {rows(all, 0, split), rows(all, split, global)};
  std::shared_ptr<FakeTwoRanks> comms[2] = {std::make_shared<FakeTwoRanks>(),
                                            std::make_shared<FakeTwoRanks>()};
  GradientAllreduce reduce0(net->parameters(), comms[0], 24 * sizeof(float));
  GradientAllreduce reduce1(net->parameters(), comms[1], 24 * sizeof(float));
  GradientAllreduce* reduces[2] = {&reduce0, &reduce1};
  const std::size_t buckets = reduce0.stats().buckets;
  ASSERT_GT(buckets, 1u);

  auto step = [&](int rank, const std::vector<std::vector<float>>* other) {
    comms[rank]->other = nullptr;
    if (other) comms[rank]->other = [other](std::size_t b, std::size_t) { return other->at(b); };
    run_step(*reduces[rank], *comms[rank], *net, shares[rank], global);
    return comms[rank]->last_step_sent(buckets);
  };
  const auto sent1 = step(1, nullptr);
  const auto sent0 = step(0, &sent1);
  for (const auto& [name, g] : gradients(*net))
    for (std::size_t k = 0; k < g.size(); ++k)
      EXPECT_NEAR(g[k], whole.at(name)[k], 1e-5) << "rank 0 " << name;
  step(1, &sent0);
  for (const auto& [name, g] : gradients(*net))
    for (std::size_t k = 0; k < g.size(); ++k)
      EXPECT_NEAR(g[k], whole.at(name)[k], 1e-5) << "rank 1 " << name;
}

TEST(GradientAllreduce, TwoRanksTogetherGiveTheWholeBatchGradient) {
  expect_ranks_match_whole_batch(4, 2);  // even halves
  expect_ranks_match_whole_batch(5, 2);  // a last batch that does not split evenly
  expect_ranks_match_whole_batch(3, 0);  // rank 0 has nothing
}

}  // namespace
}  // namespace tunecnn
