#pragma once
// A training step's peak memory, predicted before it runs at its batch (issue 29's
// --memory-budget). A fresh copy of the model takes two steps at each of two small batches
// while the allocator records every block of the second (core/allocation_trace.h), with each
// conv and pooling layer in the layout the real model's plan gives it at the real batch. Every
// block a step makes is a fixed size plus a size per example, so the two records, replayed
// event by event at the real batch, give the real step's timeline; each conv call's workspace
// goes in as the real plan's solver declares it at the real batch. Nothing runs at the real
// batch: the prediction costs four small steps and holds their memory only.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/module.h"
#include "core/sgd.h"

namespace tunecnn {

struct StepMemoryQuery {
  std::function<std::shared_ptr<Module>()> make_model;  // a fresh copy (its weights do not matter)
  Module* model = nullptr;  // the real one; its conv plans at `batch` give the workspaces
  Shape input;              // one example: C, H, W
  int batch = 0;
  int classes = 0;
  SgdOptions sgd;
  // The parameters SGD steps (--freeze-until leaves some out); empty: all of the model's.
  std::function<std::vector<NamedVariable>(Module&)> trained_parameters;
  int batches_in_flight = 1;  // input batches alive beside the step on its device (1: the step's own)
  // Where the model's parameters are and the step runs: the prediction is of that device's
  // allocator (on the GPU, device memory; cuBLAS's and cuDNN's own handles are not in it).
  Device device = Device::cpu;
};

struct StepPeak {
  std::size_t bytes = 0;  // the allocator's live bytes at the step's peak, all of the process's
  BytesByUse by_use{};    // split by use at the peak
  bool in_backward = false;
  // Blocks alive at the peak, summed by the layer whose forward made them, largest first: what
  // each layer keeps for backward (names as in the model, e.g. "features.3").
  std::vector<std::pair<std::string, std::size_t>> layers_keeping;
};

// The allocator's peak during a training step of `query.model` at `query.batch`, taken as
// train takes it (forward, loss, backward with each parameter's SGD step) from what is live now,
// plus the optimizer's state its first step makes and the input batches. Throws Error when the
// two small steps' records do not line up (the step is not the same at every batch).
StepPeak predict_step_peak(const StepMemoryQuery& query);

}  // namespace tunecnn
