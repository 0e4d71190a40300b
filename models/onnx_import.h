#pragma once
// Networks from ONNX files (`--model net.onnx`): a chain of supported nodes becomes a Sequential
// of tunecnn's own layers with the file's weights, which the tuner then plans like a built-in
// network. Debian's ONNX (libonnx-dev) reads and checks the file; models/onnx_import.cpp maps
// each node. Anything outside the supported set (an op, an attribute value, a graph that
// branches) is refused with an Error naming the file and the node; never a different network.
//
// Supported: Conv (square kernel, same stride and padding on both axes, dilation 1, any groups),
// BatchNormalization, Relu, Clip to [0, 6] (ReLU6) or [0, inf) (ReLU), MaxPool and AveragePool
// (symmetric pads, floor mode; AveragePool divides by the real pixels), GlobalAveragePool, LRN,
// Flatten (axis 1) and Reshape to [batch, features], Gemm (alpha = beta = 1) and MatMul followed
// by Add, Dropout, Identity, Constant inputs, a zero Pad before a Conv (folded into its padding),
// and a Softmax or LogSoftmax as the last node (dropped: the loss applies it). Kernels, strides,
// pads, LRN sizes and every activation side run from 1 (pads from 0) to 65,536.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/module.h"
#include "core/rng.h"

namespace tunecnn {

struct OnnxNetwork {
  std::shared_ptr<Sequential> model;
  Shape input;       // C, H, W of one example (the graph input's; its batch axis is free)
  Shape output;      // one example's output: [classes] for a classifier
  int classes = 0;   // the output's width; 0 when the output is not [batch, classes]
  std::vector<std::string> notes;  // what was folded or dropped, for the user
};

// Reads `file` and builds its network; its dropout layers draw from `dropout_rng`. Throws Error
// naming the file (and the node) for a file that cannot be read, is not ONNX, fails ONNX's
// checker, or holds what tunecnn does not import.
OnnxNetwork import_onnx(const std::filesystem::path& file, std::shared_ptr<Rng> dropout_rng);

// The graph input's C, H, W, without building the network.
Shape onnx_input_shape(const std::filesystem::path& file);

}  // namespace tunecnn
