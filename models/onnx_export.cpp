// The ONNX exporter: one node per layer of the (flattened) Sequential, named after the layer, each
// weight an initializer named "<layer>.<parameter>", values named "<layer>_out"; the graph is
// checked by onnx::checker before a byte is written.
#include "models/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>

#include "core/atomic_file.h"
#include "core/error.h"
#include "ops/batch_norm.h"
#include "ops/conv/conv2d.h"
#include "ops/dropout.h"
#include "ops/flatten.h"
#include "ops/global_avg_pool.h"
#include "ops/linear.h"
#include "ops/lrn.h"
#include "ops/pool/pool2d.h"
#include "ops/relu.h"

namespace tunecnn {
namespace {

constexpr int kOpset = 13;

Tensor named(const std::vector<NamedTensor>& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t.to(Device::cpu);
  TUNECNN_FAIL("no tensor '", name, "'");
}

std::vector<NamedTensor> parameters_of(const Module& layer) {
  std::vector<NamedTensor> out;
  for (const auto& [n, v] : layer.parameters()) out.emplace_back(n, v.data());
  return out;
}

void add_ints(onnx::NodeProto* node, const std::string& name, const std::vector<std::int64_t>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (std::int64_t v : values) a->add_ints(v);
}

void add_int(onnx::NodeProto* node, const std::string& name, std::int64_t value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void add_float(onnx::NodeProto* node, const std::string& name, double value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(value));
}

class GraphWriter {
 public:
  explicit GraphWriter(onnx::GraphProto* graph) : graph_(graph) {}

  // A node reading the current value (and `weights`, initializer names) into "<name>_out".
  onnx::NodeProto* node(const std::string& op, const std::string& name, const std::vector<std::string>& weights = {}) {
    onnx::NodeProto* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->add_input(current_);
    for (const std::string& w : weights) n->add_input(w);
    current_ = name + "_out";
    n->add_output(current_);
    return n;
  }

  // An f32 initializer named `name` holding `t` (CPU, contiguous f32).
  std::string initializer(const std::string& name, const Tensor& t) {
    TUNECNN_CHECK(t.dtype() == DType::f32, name, " is ", to_string(t.dtype()), "; ONNX export writes f32");
    onnx::TensorProto* p = graph_->add_initializer();
    p->set_name(name);
    p->set_data_type(onnx::TensorProto::FLOAT);
    for (std::int64_t d : t.shape()) p->add_dims(d);
    p->set_raw_data(t.data<float>(), static_cast<std::size_t>(t.numel()) * sizeof(float));
    return name;
  }

  std::string scalar(const std::string& name, float value) {
    onnx::TensorProto* p = graph_->add_initializer();
    p->set_name(name);
    p->set_data_type(onnx::TensorProto::FLOAT);
    p->add_float_data(value);
    return name;
  }

  const std::string& current() const { return current_; }
  void rename_last_output(const std::string& to) {
    onnx::NodeProto* last = graph_->mutable_node(graph_->node_size() - 1);
    last->set_output(0, to);
    current_ = to;
  }

 private:
  onnx::GraphProto* graph_;
  std::string current_ = "input";
};

class LayerExporter {
 public:
  explicit LayerExporter(onnx::GraphProto* graph) : out_(graph) {}

  void add(const std::string& name, const Module& layer) {
    if (const auto* seq = dynamic_cast<const Sequential*>(&layer)) {
      for (const auto& [child, module] : seq->children()) add(name.empty() ? child : name + "." + child, *module);
    } else if (const auto* conv = dynamic_cast<const Conv2d*>(&layer)) {
      add_conv(name, *conv);
    } else if (const auto* bn = dynamic_cast<const BatchNorm2d*>(&layer)) {
      add_batch_norm(name, *bn);
    } else if (const auto* relu = dynamic_cast<const ReLU*>(&layer)) {
      add_relu(name, *relu);
    } else if (const auto* pool = dynamic_cast<const Pool2d*>(&layer)) {
      add_pool(name, *pool);
    } else if (dynamic_cast<const GlobalAvgPool*>(&layer) != nullptr) {
      out_.node("GlobalAveragePool", name);
      add_int(out_.node("Flatten", name + ".flatten"), "axis", 1);  // ours yields [N, C]
    } else if (const auto* lrn = dynamic_cast<const LocalResponseNorm*>(&layer)) {
      add_lrn(name, *lrn);
    } else if (dynamic_cast<const Flatten*>(&layer) != nullptr) {
      add_int(out_.node("Flatten", name), "axis", 1);
    } else if (const auto* linear = dynamic_cast<const Linear*>(&layer)) {
      add_linear(name, *linear);
    } else if (const auto* dropout = dynamic_cast<const Dropout*>(&layer)) {
      notes_.push_back(name + " (" + dropout->describe() + ") is left out: the identity in evaluation");
    } else {
      TUNECNN_FAIL("layer ", name, " (", layer.describe(), ") has no ONNX export");
    }
  }

  const std::string& output() const { return out_.current(); }
  void name_output(const std::string& to) { out_.rename_last_output(to); }
  int classes() const { return classes_; }
  std::vector<std::string> notes() const { return notes_; }

 private:
  std::string weight(const std::string& name, const Module& layer, const std::string& param) {
    return out_.initializer(name + "." + param, named(parameters_of(layer), param));
  }
  bool has(const Module& layer, const std::string& param) const {
    for (const auto& [n, v] : layer.parameters())
      if (n == param) return true;
    return false;
  }

  void add_conv(const std::string& name, const Conv2d& conv) {
    std::vector<std::string> inputs = {weight(name, conv, "weight")};
    if (has(conv, "bias")) inputs.push_back(weight(name, conv, "bias"));
    onnx::NodeProto* n = out_.node("Conv", name, inputs);
    const ConvGeometry& g = conv.geometry();
    add_ints(n, "kernel_shape", {conv.kernel(), conv.kernel()});
    add_ints(n, "strides", {g.stride, g.stride});
    add_ints(n, "pads", {g.padding, g.padding, g.padding, g.padding});
    add_ints(n, "dilations", {1, 1});
    add_int(n, "group", g.groups);
  }

  void add_batch_norm(const std::string& name, const BatchNorm2d& bn) {
    const std::vector<NamedTensor> buffers = bn.buffers();
    onnx::NodeProto* n = out_.node(
        "BatchNormalization", name,
        {weight(name, bn, "weight"), weight(name, bn, "bias"),
         out_.initializer(name + ".running_mean", named(buffers, "running_mean")),
         out_.initializer(name + ".running_var", named(buffers, "running_var"))});
    add_float(n, "epsilon", bn.options().eps);
    add_float(n, "momentum", 1.0 - bn.options().momentum);  // ONNX weighs the running value
  }

  void add_relu(const std::string& name, const ReLU& relu) {
    if (std::isinf(relu.cap())) {
      out_.node("Relu", name);
      return;
    }
    out_.node("Clip", name, {out_.scalar(name + ".min", 0), out_.scalar(name + ".max", static_cast<float>(relu.cap()))});
  }

  void add_pool(const std::string& name, const Pool2d& pool) {
    const PoolGeometry& g = pool.geometry();
    onnx::NodeProto* n = out_.node(pool.kind() == PoolKind::max ? "MaxPool" : "AveragePool", name);
    add_ints(n, "kernel_shape", {g.kh, g.kw});
    add_ints(n, "strides", {g.sh, g.sw});
    add_ints(n, "pads", {g.ph, g.pw, g.ph, g.pw});
    if (pool.kind() != PoolKind::max) add_int(n, "count_include_pad", 0);  // ours divides by real pixels
  }

  void add_lrn(const std::string& name, const LocalResponseNorm& lrn) {
    onnx::NodeProto* n = out_.node("LRN", name);
    add_int(n, "size", lrn.params().size);
    add_float(n, "alpha", lrn.params().alpha);  // both divide alpha by size
    add_float(n, "beta", lrn.params().beta);
    add_float(n, "bias", lrn.params().k);
  }

  void add_linear(const std::string& name, const Linear& linear) {
    std::vector<std::string> inputs = {weight(name, linear, "weight")};
    if (has(linear, "bias")) inputs.push_back(weight(name, linear, "bias"));
    add_int(out_.node("Gemm", name, inputs), "transB", 1);  // ours is [out, in]
    classes_ = static_cast<int>(named(parameters_of(linear), "weight").shape()[0]);
  }

  GraphWriter out_;
  int classes_ = 0;  // the last Linear's outputs
  std::vector<std::string> notes_;
};

void describe_value(onnx::ValueInfoProto* v, const std::string& name, const Shape& dims) {
  v->set_name(name);
  auto* type = v->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_param("batch");
  for (std::int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
}

}  // namespace

std::vector<std::string> export_onnx(const Module& model, const Shape& input, const std::filesystem::path& file) {
  TUNECNN_CHECK(input.size() == 3, "ONNX export needs the example's C, H, W, got ", shape_str(input));
  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("tunecnn");
  proto.add_opset_import()->set_version(kOpset);
  onnx::GraphProto* graph = proto.mutable_graph();
  graph->set_name("tunecnn");
  LayerExporter layers(graph);
  layers.add("", model);
  TUNECNN_CHECK(layers.classes() > 0 && graph->node_size() > 0 && graph->node(graph->node_size() - 1).op_type() == "Gemm",
                "ONNX export needs a network that ends in a fully connected layer (its classes)");
  layers.name_output("logits");
  describe_value(graph->add_input(), "input", input);
  describe_value(graph->add_output(), "logits", {layers.classes()});
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    TUNECNN_FAIL("the exported graph fails ONNX's checker (a bug in tunecnn's exporter): ", e.what());
  }
  std::string bytes;
  TUNECNN_CHECK(proto.SerializeToString(&bytes), "protobuf could not serialise the graph (over 2 GiB?)");
  write_file_atomically(file, bytes);
  return layers.notes();
}

}  // namespace tunecnn
