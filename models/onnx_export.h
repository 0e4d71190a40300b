#pragma once
// Networks to ONNX files (`export-onnx`, `train --export`): opset 13, the weights as
// initializers, the input `input` [batch, C, H, W] (batch free) and the output `logits`
// [batch, classes]. BatchNorm stays BatchNormalization (its running statistics included), ReLU6
// becomes Clip to [0, 6], LRN stays LRN, dropout is left out (the identity in evaluation), and
// tunecnn's global average pool, which yields [N, C], becomes GlobalAveragePool + Flatten. The
// file passes ONNX's checker before it is written, atomically; models/onnx_import.h reads it back.
#include <filesystem>
#include <string>
#include <vector>

#include "core/module.h"

namespace tunecnn {

// Writes `model` (its parameters and buffers on the CPU) for examples of `input` (C, H, W).
// Returns what was left out, for the user. Throws Error naming the layer for one ONNX export
// does not cover, or when `file` cannot be written.
std::vector<std::string> export_onnx(const Module& model, const Shape& input,
                                     const std::filesystem::path& file);

}  // namespace tunecnn
