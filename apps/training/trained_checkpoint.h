#pragma once
// What `evaluate`, `predict` and `export-onnx` share: the checkpoint `train` wrote (--checkpoint,
// a file or its folder), the network it holds with its weights, and inference plans from the
// tuning cache (--tune, --tune-cache).
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "apps/common/cli.h"
#include "core/checkpoint.h"
#include "core/module.h"

namespace tunecnn {

struct TrainedCheckpoint {
  std::filesystem::path file;
  CheckpointData data;
  std::string source;  // "checkpoint FILE", for messages
  std::string model;   // --model, else the name the checkpoint records
  Shape example;       // C, H, W: recorded, else the model's own
  int classes = 0;     // recorded, else the rows of its last two-dimensional parameter

  // Builds the network (untuned plans) and loads the checkpoint's weights into it.
  std::shared_ptr<Sequential> build_network() const;
};

// Reads --checkpoint (required: UsageError without it) and checks it is a training checkpoint;
// Error naming the file otherwise.
TrainedCheckpoint read_trained_checkpoint(const CommandLine& cli);

// Declares --tune and --tune-cache as evaluate and predict take them.
void add_inference_tuning_options(CommandLine& cli);
// Plans `model`'s layers for inference on batches of `batch_sizes` examples of `example`,
// through the tuning cache under --tune.
void plan_for_inference(Module& model, const Shape& example, const std::set<std::int64_t>& batch_sizes,
                        const CommandLine& cli);

}  // namespace tunecnn
