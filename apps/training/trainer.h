#pragma once
// The training loop behind `train`: data, model, SGD, per-epoch evaluation, CSV log, progress
// output, checkpoints every epoch, on Ctrl-C and on request, exact resume, and a clean stop on a
// non-finite loss that keeps the last good checkpoint.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <filesystem>
#include <optional>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/communicator.h"
#include "core/gradient_allreduce.h"

namespace tunecnn {

struct TrainOptions {
  std::string model = "lenet";
  std::string data = "fashion-mnist";  // data_set_names() in data_sources.h
  std::filesystem::path data_dir;  // empty: the data set's default location
  std::filesystem::path val_labels;  // imagenet's flat val/ labels file; empty: DIR/val_labels.txt
  int epochs = 2;
  CachePolicy allocator_cache = CachePolicy::keep;  // the CPU allocator's
  bool recompute_activations = false;  // set_recompute_activations
  // Bytes the CPU allocator's peak in a training step must fit (apps/training/memory_budget.h):
  // the planner lowers workspaces and recomputes activations until the predicted peak fits, and
  // the allocator's cache is capped there. 0: none.
  std::size_t memory_budget = 0;
  int batch_size = 64;
  // Unset: the model's own (training_defaults in models/registry.h), as is warmup_epochs.
  std::optional<double> lr;
  double momentum = 0.9;
  double weight_decay = 5e-4;
  bool nesterov = false;
  std::string schedule = "cosine";
  double step_epochs = 1, gamma = 0.1;
  std::optional<double> warmup_epochs;  // linear warmup of the rate (core/lr_schedule.h WarmupLr)
  std::uint64_t seed = 1;
  int threads = 0;                       // 0: every core
  // Where the model trains. On the GPU, batches go up through pinned buffers, the tuner times
  // with CUDA events and tunes into the GPU's section of the cache; labels, metrics and
  // checkpoints stay on the host. Not yet with several ranks (NCCL is to come).
  Device device = Device::cpu;
  std::filesystem::path checkpoint_dir;  // empty: no checkpoints
  std::int64_t checkpoint_every = 0;     // batches between mid-epoch checkpoints; 0: per epoch
  bool resume = false;
  // Start afresh although --checkpoint-dir holds an earlier run's checkpoint (it is replaced at
  // the first save); without it such a run is refused before anything slow happens.
  bool overwrite = false;
  std::filesystem::path log_csv;         // empty: no CSV log
  std::filesystem::path export_onnx;     // empty: none; else the trained network as ONNX at the end
  // Empty: random initial weights. Else a checkpoint or ONNX file whose weights the run starts
  // from (apps/training/initial_weights.h); not read on --resume, whose checkpoint has them.
  std::filesystem::path init_from;
  // Empty: every layer trains. Else the model's top-level layers up to and including this one keep
  // their weights (left out of SGD; batch norm's running statistics still follow the data).
  std::string freeze_until;
  std::int64_t train_limit = 0;          // use only the first N examples (0: all)
  std::int64_t test_limit = 0;
  bool quiet = false;                    // no progress lines (tests)
  // Conv tuning (--tune): "off", "cached", "full" or "verify" (autotune/tuned_planner.h).
  // Empty leaves the process's conv planner alone (the untuned default; what tests use).
  // When set, the plans for every batch shape the run will see are built before the first step
  // by the network planner (tuning, then the layout DP over the chain; no random numbers are
  // drawn, so runs and resumes stay identical), and one "tuning: ..." line is printed.
  std::string tune;
  std::filesystem::path tune_cache;      // empty: default_tuning_cache_path()
  double tune_budget = 0;                // seconds of profiling at most (TunedPlanner::set_budget); 0: none
  std::size_t max_workspace = SIZE_MAX;  // conv workspace budget for tuned candidates
  std::vector<std::string> force_solvers;  // --force-solver: only these conv solvers where they run
  // The job's processes (core/communicator.h); null: this process alone. With more than one
  // rank, batch_size is the global batch: each rank trains on its share of every batch
  // (data_loader.h), gradients are averaged by allreduce in buckets of allreduce_bucket_bytes,
  // metrics are summed over ranks, rank 0 alone prints and writes checkpoints.
  std::shared_ptr<Communicator> comm;
  std::size_t allreduce_bucket_bytes = GradientAllreduce::kDefaultBucketBytes;
  // Called after every training step with the 0-based epoch and the 1-based batch just done.
  std::function<void(int epoch, std::int64_t batch)> on_batch_end;
};

struct EpochMetrics {
  int epoch = 0;  // 1-based
  double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0, test_top5 = 0;
  double images_per_s = 0, seconds = 0;
  double lr = 0;
};

enum class TrainStatus { completed, interrupted, diverged };

struct TrainResult {
  TrainStatus status = TrainStatus::completed;
  std::vector<EpochMetrics> epochs;  // the epochs completed in this run
  std::string message;
};

// Set by the SIGINT and SIGTERM handler (or a test): the loop saves a checkpoint and returns at the next batch.
std::atomic<bool>& stop_requested();
void install_interrupt_handler();

TrainResult train(const TrainOptions& options, std::ostream& out);

std::filesystem::path checkpoint_path(const std::filesystem::path& dir);  // DIR/last.ckpt
// DIR/previous.ckpt: the checkpoint before last.ckpt, which --resume falls back to when last.ckpt
// is missing or corrupt (a crash or a full disk while it was replaced).
std::filesystem::path previous_checkpoint_path(const std::filesystem::path& dir);

}  // namespace tunecnn
