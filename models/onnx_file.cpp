#include "models/onnx_file.h"

#include <onnx/checker.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include "core/error.h"

namespace tunecnn::onnx_file {
namespace {

constexpr std::int64_t kMaxElements = std::int64_t{1} << 32;

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::int64_t element_count(const std::vector<std::int64_t>& dims, const std::string& what) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    TUNECNN_CHECK(d >= 0 && (d == 0 || n <= kMaxElements / d), what, ": dims ",
                  shape_str(Shape(dims.begin(), dims.end())), " are negative or too large");
    n *= d;
  }
  return n;
}

}  // namespace

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return printable(text);
}

onnx::ModelProto load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  TUNECNN_CHECK(in.good(), file.string(), ": cannot open it for reading");
  onnx::ModelProto model;
  TUNECNN_CHECK(model.ParseFromIstream(&in), file.string(),
                ": not an ONNX model (its protobuf does not parse: truncated, or another format)");
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    TUNECNN_FAIL(file.string(), ": ONNX's checker refuses it: ", one_line(e.what()));
  }
  return model;
}

GraphInput data_input(const onnx::GraphProto& graph) {
  std::set<std::string> initializers;
  for (const onnx::TensorProto& t : graph.initializer()) initializers.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const onnx::ValueInfoProto& v : graph.input())
    if (!initializers.count(v.name())) inputs.push_back(&v);
  TUNECNN_CHECK(inputs.size() == 1, "the graph has ", inputs.size(),
                " data inputs (inputs that are not initializers); tunecnn imports networks with one");
  const onnx::ValueInfoProto& v = *inputs.front();
  const auto& type = v.type().tensor_type();
  TUNECNN_CHECK(type.elem_type() == onnx::TensorProto::FLOAT, "input '", v.name(),
                "' is not float32 (ONNX element type ", type.elem_type(), ")");
  TUNECNN_CHECK(type.shape().dim_size() == 4, "input '", v.name(), "' has ", type.shape().dim_size(),
                " dims; tunecnn imports networks on N x C x H x W images");
  GraphInput input{v.name(), {}};
  for (int i = 1; i < 4; ++i) {
    const auto& dim = type.shape().dim(i);
    TUNECNN_CHECK(dim.has_dim_value() && dim.dim_value() > 0 && dim.dim_value() <= kMaxSide, "input '",
                  v.name(), "' dim ", i, " is ", dim.has_dim_value() ? std::to_string(dim.dim_value()) : "free",
                  "; C, H and W must be fixed, from 1 to ", kMaxSide);
    input.chw.push_back(dim.dim_value());
  }
  return input;
}

Floats floats(const onnx::TensorProto& tensor, const std::string& what) {
  TUNECNN_CHECK(tensor.data_type() == onnx::TensorProto::FLOAT, what, " is not float32 (ONNX element type ",
                tensor.data_type(), ")");
  TUNECNN_CHECK(tensor.data_location() != onnx::TensorProto::EXTERNAL, what,
                " keeps its data in an external file, which tunecnn does not read");
  Floats f{{tensor.dims().begin(), tensor.dims().end()}, {}};
  const std::int64_t n = element_count(f.dims, what);
  if (tensor.has_raw_data()) {
    const std::string& raw = tensor.raw_data();
    TUNECNN_CHECK(static_cast<std::int64_t>(raw.size()) == n * 4, what, ": ", raw.size(),
                  " bytes of data for ", n, " floats");
    f.values.resize(static_cast<std::size_t>(n));
    std::memcpy(f.values.data(), raw.data(), raw.size());  // little-endian, as ONNX stores them
  } else {
    TUNECNN_CHECK(tensor.float_data_size() == n, what, ": ", tensor.float_data_size(), " values for ", n,
                  " elements");
    f.values.assign(tensor.float_data().begin(), tensor.float_data().end());
  }
  return f;
}

std::vector<std::int64_t> int64s(const onnx::TensorProto& tensor, const std::string& what) {
  TUNECNN_CHECK(tensor.data_type() == onnx::TensorProto::INT64, what, " is not int64 (ONNX element type ",
                tensor.data_type(), ")");
  const std::int64_t n = element_count({tensor.dims().begin(), tensor.dims().end()}, what);
  std::vector<std::int64_t> values(tensor.int64_data().begin(), tensor.int64_data().end());
  if (tensor.has_raw_data()) {
    TUNECNN_CHECK(static_cast<std::int64_t>(tensor.raw_data().size()) == n * 8, what, ": ",
                  tensor.raw_data().size(), " bytes of data for ", n, " int64 values");
    values.resize(static_cast<std::size_t>(n));
    std::memcpy(values.data(), tensor.raw_data().data(), tensor.raw_data().size());
  }
  TUNECNN_CHECK(static_cast<std::int64_t>(values.size()) == n, what, ": ", values.size(), " values for ", n,
                " elements");
  return values;
}

std::int64_t int_attr(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback) {
  const onnx::AttributeProto* a = find_attr(node, name);
  return a != nullptr ? a->i() : fallback;
}

double decimal_of(float value) {
  char text[64];
  const auto written = std::to_chars(text, text + sizeof text, value);
  double decimal = 0;
  std::from_chars(text, written.ptr, decimal);
  return decimal;
}

double float_attr(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const onnx::AttributeProto* a = find_attr(node, name);
  return decimal_of(a != nullptr ? a->f() : fallback);
}

std::string string_attr(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) {
  const onnx::AttributeProto* a = find_attr(node, name);
  return a != nullptr ? a->s() : fallback;
}

std::vector<std::int64_t> ints_attr(const onnx::NodeProto& node, const std::string& name,
                                    std::vector<std::int64_t> fallback) {
  const onnx::AttributeProto* a = find_attr(node, name);
  return a != nullptr ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::vector<std::string> attribute_names(const onnx::NodeProto& node) {
  std::vector<std::string> names;
  for (const onnx::AttributeProto& a : node.attribute()) names.push_back(a.name());
  return names;
}

std::string label(const onnx::NodeProto& node, int index) {
  std::string text = "node " + std::to_string(index);
  if (!node.name().empty()) text += " '" + node.name() + "'";
  return text + " (" + node.op_type() + ")";
}

}  // namespace tunecnn::onnx_file
