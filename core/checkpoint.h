#pragma once
// Checkpoints: named tensors (weights, buffers, optimizer state) and text metadata (epoch,
// position in the epoch, RNG states, options), in one binary file with a CRC-32 trailer, written
// atomically. Loading validates everything and names the file in every error.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/module.h"

namespace tunecnn {

struct CheckpointData {
  std::map<std::string, std::string> meta;
  std::vector<NamedTensor> tensors;

  const Tensor* find(const std::string& name) const;    // nullptr when missing
  const Tensor& tensor(const std::string& name) const;  // throws Error when missing
  const std::string& value(const std::string& key) const;  // throws Error when missing
};

void save_checkpoint(const std::filesystem::path& path, const CheckpointData& data);
CheckpointData load_checkpoint(const std::filesystem::path& path);

// Copies every parameter and buffer of `module` from "param/<name>" / "buffer/<name>" tensors;
// a missing name or a shape mismatch is an Error that names both.
void load_module_state(Module& module, const CheckpointData& data, const std::string& source);
void add_module_state(const Module& module, CheckpointData& data);

}  // namespace tunecnn
