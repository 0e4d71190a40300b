#pragma once
// Reading an ONNX file for the importer (models/onnx_import.cpp): the parse and ONNX's own
// checker, the graph's one data input, tensors of float values, and node attributes with ONNX's
// defaults. Errors name what was read; the importer adds the file and the node.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tunecnn::onnx_file {

// The largest image side, kernel, stride, padding and LRN size imported: far beyond any image a
// CNN here takes, far below what would overflow the shape arithmetic or tunecnn's int geometry.
constexpr std::int64_t kMaxSide = 1 << 16;

// Parses `file` and runs onnx::checker on it. Throws Error naming the file.
onnx::ModelProto load(const std::filesystem::path& file);

// The graph input that is not an initializer: its name and C, H, W (the batch axis may be free).
struct GraphInput {
  std::string name;
  Shape chw;
};
GraphInput data_input(const onnx::GraphProto& graph);

// A float tensor's dims and values, from raw_data or float_data; `what` names it in errors.
struct Floats {
  std::vector<std::int64_t> dims;
  std::vector<float> values;
};
Floats floats(const onnx::TensorProto& tensor, const std::string& what);
// An int64 tensor's values (a Reshape's shape, a Pad's pads).
std::vector<std::int64_t> int64s(const onnx::TensorProto& tensor, const std::string& what);

// Node attributes, each with the default ONNX gives it when absent.
std::int64_t int_attr(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback);
// A float attribute as the decimal it was written from (decimal_of): tunecnn keeps epsilon,
// momentum and LRN's constants in double, and the float's own value (1e-5f is 9.99999975e-06)
// would make an imported network round differently from the one exported.
double float_attr(const onnx::NodeProto& node, const std::string& name, float fallback);
// The shortest decimal that reads back as `value`.
double decimal_of(float value);
std::string string_attr(const onnx::NodeProto& node, const std::string& name, const std::string& fallback);
std::vector<std::int64_t> ints_attr(const onnx::NodeProto& node, const std::string& name,
                                    std::vector<std::int64_t> fallback);
// The attribute names the node sets, for refusing ones the importer does not know.
std::vector<std::string> attribute_names(const onnx::NodeProto& node);

// Text from the file (a node's name, ONNX's checker quoting a node over several lines) fit for a
// message: on one line, control bytes written as \xNN (printable()), as a name in a hostile file
// may hold a terminal escape.
std::string one_line(std::string text);

// "node 3 'conv1' (Conv)" for messages.
std::string label(const onnx::NodeProto& node, int index);

}  // namespace tunecnn::onnx_file
