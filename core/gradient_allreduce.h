#pragma once
// Averages the parameters' gradients over the ranks of a data-parallel job, the way PyTorch's
// DistributedDataParallel does: the parameters are grouped, in the order backward finishes them
// (the last layer first), into a few buckets of about bucket_bytes; a bucket's allreduce starts as
// soon as backward has finished every gradient in it, so communication overlaps the rest of
// backward, and finish() waits for the last ones.
//
// The result is the gradient of the mean loss over the global batch: each rank's gradient (of its
// local mean) is weighted by local/global examples before the sum, so ranks with unequal shares
// of a last, smaller batch still add up exactly. A rank with no examples in a step calls only
// begin_step and finish, and contributes zeros.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/communicator.h"
#include "core/module.h"

namespace tunecnn {

struct AllreduceStats {
  std::size_t buckets = 0;
  std::size_t bytes_per_step = 0;  // payload this rank sends into the allreduces of one step
  std::int64_t steps = 0;
  double wait_seconds = 0;  // in finish(): communication that backward did not hide
};

class GradientAllreduce {
 public:
  // `parameters` in registration order (Module::parameters()); f32 only.
  GradientAllreduce(std::vector<NamedVariable> parameters, std::shared_ptr<Communicator> comm,
                    std::size_t bucket_bytes = kDefaultBucketBytes);

  // 1 MiB: LeNet's 1.6 MB of parameters and the CIFAR net's 4.3 MB go in 3 buckets each (a
  // tensor over 1 MiB, such as an fc weight, is a bucket of its own), AlexNet's 250 MB in many;
  // fewer, larger buckets lose overlap, smaller ones pay per-call latency.
  static constexpr std::size_t kDefaultBucketBytes = std::size_t{1} << 20;

  // Before backward: this rank's and the whole job's example counts for this step.
  void begin_step(std::int64_t local_examples, std::int64_t global_examples);
  // The hook for Variable::backward: `parameter`'s gradient is final.
  void on_gradient_ready(const Variable& parameter);
  // After backward: starts the buckets not yet started, waits for all, and writes the averaged
  // gradients back into every parameter.
  void finish();

  // The whole step: begin_step, `loss`'s backward with on_gradient_ready as its hook (no
  // backward when this rank has no examples), finish.
  void backward(Variable& loss, std::int64_t local_examples, std::int64_t global_examples);

  const AllreduceStats& stats() const { return stats_; }
  // Parameter names per bucket, in the order buckets are reduced (for tests and --help text).
  std::vector<std::vector<std::string>> bucket_layout() const;

 private:
  struct Bucket {
    std::vector<std::size_t> parameters;  // indices into parameters_
    std::vector<std::size_t> offsets;     // each parameter's start in `buffer`, in floats
    std::vector<float> buffer;
    std::size_t ready = 0;                // parameters finished this step
  };

  std::vector<NamedVariable> parameters_;
  std::shared_ptr<Communicator> comm_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // parameter index -> bucket
  std::vector<std::size_t> slot_of_;    // parameter index -> its place in the bucket
  std::vector<bool> ready_;             // parameter index -> gradient final this step
  std::unordered_map<const void*, std::size_t> index_of_;  // Variable::id() -> parameter index
  std::size_t next_to_start_ = 0;  // buckets start in index order on every rank
  float scale_ = 1;
  AllreduceStats stats_;

  void copy_in(std::size_t parameter);
  void start_ready_buckets();
  void copy_out(const Bucket& bucket);
};

}  // namespace tunecnn
