// The ONNX importer: walks the graph's nodes in order, checks that they form one chain (each
// node's data input is the previous node's output and no value feeds two nodes), and turns each
// into tunecnn's layer with the file's weights, tracking one example's shape so every weight's
// dims are checked against the layer it fills. A node is refused rather than approximated.
#include "models/onnx_import.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/error.h"
#include "models/onnx_file.h"
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

using onnx_file::Floats;

constexpr const char* kSupported =
    "Conv, BatchNormalization, Relu, Clip to [0, 6] or [0, inf), MaxPool, AveragePool, "
    "GlobalAveragePool, LRN, Flatten, Reshape to [batch, features], Gemm, MatMul + Add, Dropout, "
    "Identity, Constant, a zero Pad before a Conv, and Softmax or LogSoftmax as the last node";

// A handle on the layer's parameter (it shares the layer's storage).
Tensor parameter(Module& layer, const std::string& name) {
  for (auto& [n, v] : layer.parameters())
    if (n == name) return v.data();
  TUNECNN_FAIL("the layer has no parameter '", name, "'");
}

Tensor buffer(Module& layer, const std::string& name) {
  for (auto& [n, t] : layer.buffers())
    if (n == name) return t;  // shares the layer's storage
  TUNECNN_FAIL("the layer has no buffer '", name, "'");
}

void copy_into(Tensor target, const Floats& f, const std::string& what) {
  const Shape dims(f.dims.begin(), f.dims.end());
  TUNECNN_CHECK(dims == target.shape(), what, " has dims ", shape_str(dims), " where the layer needs ",
                shape_str(target.shape()));
  std::copy(f.values.begin(), f.values.end(), target.data<float>());
}

// Output side of a window over `in` pixels (floor mode), checked to be from 1 to kMaxSide. The
// window's sizes are already within window_of's bounds, so nothing here overflows.
std::int64_t window_out(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  TUNECNN_CHECK(in + 2 * pad >= kernel, "a ", kernel, "-wide window with padding ", pad, " does not fit ", in,
                " pixels");
  const std::int64_t out = (in + 2 * pad - kernel) / stride + 1;
  TUNECNN_CHECK(out <= onnx_file::kMaxSide, "a ", kernel, "-wide window with stride ", stride, " and padding ",
                pad, " over ", in, " pixels gives ", out, ", more than ", onnx_file::kMaxSide);
  return out;
}

// Each value from `lowest` to kMaxSide: a hostile file's strides of 0 or pads of 2^62 are refused
// before any arithmetic on them.
void check_range(const std::vector<std::int64_t>& values, std::int64_t lowest, const char* what) {
  for (std::int64_t v : values)
    TUNECNN_CHECK(v >= lowest && v <= onnx_file::kMaxSide, what, " ", v, " is not supported (from ", lowest,
                  " to ", onnx_file::kMaxSide, " are)");
}

// Kernel, stride and padding of a Conv or pooling node, equal on both axes where `square`.
struct Window {
  std::int64_t kh, kw, sh, sw, ph, pw;
};

Window window_of(const onnx::NodeProto& node, std::vector<std::int64_t> kernel, bool square) {
  using namespace onnx_file;
  TUNECNN_CHECK(string_attr(node, "auto_pad", "NOTSET") == "NOTSET", "auto_pad ",
                string_attr(node, "auto_pad", ""), " is not supported; explicit pads are");
  kernel = ints_attr(node, "kernel_shape", kernel);
  const auto strides = ints_attr(node, "strides", {1, 1});
  const auto pads = ints_attr(node, "pads", {0, 0, 0, 0});
  const auto dilations = ints_attr(node, "dilations", {1, 1});
  TUNECNN_CHECK(kernel.size() == 2 && strides.size() == 2 && pads.size() == 4 && dilations.size() == 2,
                "needs 2-D kernel_shape, strides, dilations and 4 pads");
  TUNECNN_CHECK(dilations[0] == 1 && dilations[1] == 1, "dilation ", dilations[0], "x", dilations[1],
                " is not supported (1 is)");
  check_range(kernel, 1, "kernel_shape");
  check_range(strides, 1, "stride");
  check_range(pads, 0, "padding");
  TUNECNN_CHECK(pads[0] == pads[2] && pads[1] == pads[3], "asymmetric pads [", pads[0], ", ", pads[1], ", ",
                pads[2], ", ", pads[3], "] are not supported (begin and end must be equal)");
  const Window w{kernel[0], kernel[1], strides[0], strides[1], pads[0], pads[1]};
  if (square)
    TUNECNN_CHECK(w.kh == w.kw && w.sh == w.sw && w.ph == w.pw, "kernel ", w.kh, "x", w.kw, ", stride ", w.sh,
                  "x", w.sw, ", pads ", w.ph, "x", w.pw,
                  ": tunecnn's Conv2d takes a square kernel with the same stride and padding on both axes");
  return w;
}

class ChainBuilder {
 public:
  ChainBuilder(const onnx::GraphProto& graph, std::shared_ptr<Rng> dropout_rng)
      : dropout_rng_(std::move(dropout_rng)), net_(std::make_shared<Sequential>()) {
    for (const onnx::TensorProto& t : graph.initializer()) initializers_[t.name()] = &t;
    const onnx_file::GraphInput input = onnx_file::data_input(graph);
    current_ = input.name;
    shape_ = input.chw;
    input_ = input.chw;
  }

  void add(const onnx::NodeProto& node, bool last) {
    const std::string& op = node.op_type();
    TUNECNN_CHECK(node.domain().empty() || node.domain() == "ai.onnx", "op domain '", node.domain(),
                  "' is not supported (the default ONNX domain is)");
    if (op == "Constant") return keep_constant(node);
    TUNECNN_CHECK(node.input_size() > 0 && node.input(0) == current_, "its data input '",
                  node.input_size() > 0 ? node.input(0) : "", "' is not '", current_,
                  "', the previous node's output: tunecnn imports a chain of nodes, not a graph that branches");
    TUNECNN_CHECK(pad_ == 0 || op == "Conv", "a Pad is supported only right before a Conv");
    TUNECNN_CHECK(!pending_linear_ || op == "Add", "a MatMul is supported only when an Add of its bias follows");
    dispatch(node, op, last);
    current_ = node.output(0);
  }

  OnnxNetwork finish(const onnx::GraphProto& graph) {
    TUNECNN_CHECK(pending_linear_ == nullptr, "the last MatMul has no Add of its bias after it");
    TUNECNN_CHECK(pad_ == 0, "the last Pad has no Conv after it");
    TUNECNN_CHECK(graph.output_size() == 1 && graph.output(0).name() == current_, "the graph's output is not ",
                  "the last node's: tunecnn imports a chain that ends in the network's one output");
    return {net_, input_, shape_, shape_.size() == 1 ? static_cast<int>(shape_[0]) : 0, notes_};
  }

  // No value, the graph's input included, feeds more than one node.
  static void check_single_use(const onnx::GraphProto& graph) {
    std::map<std::string, int> uses;
    for (const onnx::NodeProto& node : graph.node())
      for (const std::string& in : node.input()) ++uses[in];
    for (const onnx::ValueInfoProto& input : graph.input())
      TUNECNN_CHECK(uses[input.name()] <= 1, "input '", input.name(), "' feeds ", uses[input.name()],
                    " nodes; tunecnn imports a chain of nodes, not a graph that branches");
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto& node = graph.node(i);
      for (int k = 0; k < node.output_size(); ++k)
        TUNECNN_CHECK(uses[node.output(k)] <= 1, onnx_file::label(node, i), ": its output '", node.output(k),
                      "' feeds ", uses[node.output(k)],
                      " nodes; tunecnn imports a chain of nodes, not a graph that branches");
    }
  }

 private:
  void dispatch(const onnx::NodeProto& node, const std::string& op, bool last) {
    if (op == "Conv") return conv(node);
    if (op == "BatchNormalization") return batch_norm(node);
    if (op == "Relu") return append(std::make_shared<ReLU>(), "relu");
    if (op == "Clip") return clip(node);
    if (op == "MaxPool") return pool(node, PoolKind::max);
    if (op == "AveragePool") return pool(node, PoolKind::avg);
    if (op == "GlobalAveragePool") return global_avg_pool();
    if (op == "LRN") return lrn(node);
    if (op == "Flatten") return flatten(node);
    if (op == "Reshape") return reshape(node);
    if (op == "Gemm") return gemm(node);
    if (op == "MatMul") return matmul(node);
    if (op == "Add") return add_bias(node);
    if (op == "Dropout") return dropout(node);
    if (op == "Pad") return pad(node);
    if (op == "Identity") return;
    if ((op == "Softmax" || op == "LogSoftmax") && last) {
      notes_.push_back("the final " + op + " is left out: tunecnn's loss applies the softmax");
      return;
    }
    TUNECNN_FAIL("op ", op, " is not supported", op == "Softmax" || op == "LogSoftmax" ? " before the last node" : "",
                 "; tunecnn imports ", kSupported);
  }

  void keep_constant(const onnx::NodeProto& node) {
    TUNECNN_CHECK(node.attribute_size() == 1 && node.attribute(0).name() == "value" && node.output_size() == 1,
                  "only Constant nodes with a 'value' tensor are supported");
    constants_[node.output(0)] = node.attribute(0).t();
  }

  // An input that must be an initializer or a Constant's output (weights, shapes, pads).
  const onnx::TensorProto& tensor_input(const onnx::NodeProto& node, int index, const std::string& what) {
    TUNECNN_CHECK(index < node.input_size() && !node.input(index).empty(), "its ", what, " input is missing");
    const std::string& name = node.input(index);
    if (const auto it = initializers_.find(name); it != initializers_.end()) return *it->second;
    if (const auto it = constants_.find(name); it != constants_.end()) return it->second;
    TUNECNN_FAIL("its ", what, " '", name, "' is computed in the graph; tunecnn needs it as an initializer or a Constant");
  }

  Floats weight(const onnx::NodeProto& node, int index, const std::string& what) {
    return onnx_file::floats(tensor_input(node, index, what), what + " '" + node.input(index) + "'");
  }

  std::optional<Floats> optional_weight(const onnx::NodeProto& node, int index, const std::string& what) {
    if (index >= node.input_size() || node.input(index).empty()) return std::nullopt;
    return weight(node, index, what);
  }

  // A one-value input (Clip's bounds, Dropout's ratio, Pad's constant_value), when present.
  std::optional<float> optional_scalar(const onnx::NodeProto& node, int index, const std::string& what) {
    const std::optional<Floats> f = optional_weight(node, index, what);
    if (!f) return std::nullopt;
    TUNECNN_CHECK(f->values.size() == 1, what, " has ", f->values.size(), " values, not one");
    return f->values[0];
  }

  std::vector<std::int64_t> int64_input(const onnx::NodeProto& node, int index, const std::string& what) {
    return onnx_file::int64s(tensor_input(node, index, what), what + " '" + node.input(index) + "'");
  }

  void append(std::shared_ptr<Module> layer, const std::string& kind) {
    net_->add(std::move(layer), kind + std::to_string(++counts_[kind]));
  }

  void require_image(const char* op) const {
    TUNECNN_CHECK(shape_.size() == 3, op, " needs C x H x W activations, here they are ", shape_str(shape_));
  }

  void conv(const onnx::NodeProto& node) {
    require_image("Conv");
    const Floats w = weight(node, 1, "weight");
    TUNECNN_CHECK(w.dims.size() == 4, "weight has ", w.dims.size(), " dims, not 4");
    Window win = window_of(node, {w.dims[2], w.dims[3]}, true);
    TUNECNN_CHECK(win.kh == w.dims[2] && win.kw == w.dims[3], "kernel_shape does not match the weight's dims");
    win.ph += pad_, win.pw += pad_;
    pad_ = 0;
    const std::int64_t groups = onnx_file::int_attr(node, "group", 1);
    TUNECNN_CHECK(groups > 0 && groups <= shape_[0], "group ", groups, " is not from 1 to the input's ", shape_[0],
                  " channels");
    const std::int64_t in = w.dims[1] * groups, out = w.dims[0];
    TUNECNN_CHECK(in == shape_[0], "weight ", shape_str(Shape(w.dims.begin(), w.dims.end())), " with group ",
                  groups, " takes ", in, " channels; the input has ", shape_[0]);
    const std::optional<Floats> b = optional_weight(node, 2, "bias");
    auto layer = std::make_shared<Conv2d>(static_cast<int>(in), static_cast<int>(out), static_cast<int>(win.kh),
                                          static_cast<int>(win.sh), static_cast<int>(win.ph), init_rng_,
                                          static_cast<int>(groups), b.has_value());
    copy_into(parameter(*layer, "weight"), w, "weight");
    if (b) copy_into(parameter(*layer, "bias"), *b, "bias");
    shape_ = {out, window_out(shape_[1], win.kh, win.sh, win.ph), window_out(shape_[2], win.kw, win.sw, win.pw)};
    append(layer, "conv");
  }

  void batch_norm(const onnx::NodeProto& node) {
    require_image("BatchNormalization");
    TUNECNN_CHECK(onnx_file::int_attr(node, "training_mode", 0) == 0 && node.output_size() == 1,
                  "training_mode and its extra outputs are not supported");
    // ONNX's momentum weighs the running value (0.9); tunecnn's, like PyTorch's, the batch's (0.1),
    // rounded to a float's digits again: 1 - 0.9 is 0.09999999999999998 in double, not 0.1.
    const double momentum = onnx_file::float_attr(node, "momentum", 0.9f);
    TUNECNN_CHECK(momentum >= 0 && momentum <= 1, "momentum ", momentum, " is not in [0, 1]");
    BatchNormOptions options;
    options.momentum = onnx_file::decimal_of(static_cast<float>(1.0 - momentum));
    options.eps = onnx_file::float_attr(node, "epsilon", 1e-5f);
    auto layer = std::make_shared<BatchNorm2d>(static_cast<int>(shape_[0]), options);
    copy_into(parameter(*layer, "weight"), weight(node, 1, "scale"), "scale");
    copy_into(parameter(*layer, "bias"), weight(node, 2, "B"), "B");
    copy_into(buffer(*layer, "running_mean"), weight(node, 3, "mean"), "mean");
    copy_into(buffer(*layer, "running_var"), weight(node, 4, "var"), "var");
    append(layer, "bn");
  }

  // Clip's bounds: inputs from opset 11, attributes before.
  void clip(const onnx::NodeProto& node) {
    const auto bound = [&](int index, const char* attr, float fallback) {
      if (const std::optional<float> f = optional_scalar(node, index, attr)) return *f;
      return static_cast<float>(onnx_file::float_attr(node, attr, fallback));
    };
    const float inf = std::numeric_limits<float>::infinity();
    const float lo = bound(1, "min", -inf), hi = bound(2, "max", inf);
    if (lo == 0 && hi == 6) return append(std::make_shared<ReLU6>(), "relu");
    if (lo == 0 && std::isinf(hi) && hi > 0) return append(std::make_shared<ReLU>(), "relu");
    TUNECNN_FAIL("Clip to [", lo, ", ", hi, "] is not supported; [0, 6] (ReLU6) and [0, inf) (ReLU) are");
  }

  void pool(const onnx::NodeProto& node, PoolKind kind) {
    require_image(node.op_type().c_str());
    TUNECNN_CHECK(onnx_file::int_attr(node, "ceil_mode", 0) == 0, "ceil_mode 1 is not supported (floor is)");
    TUNECNN_CHECK(node.output_size() == 1, "the Indices output is not supported");
    TUNECNN_CHECK(onnx_file::int_attr(node, "storage_order", 0) == 0, "storage_order 1 is not supported");
    const Window w = window_of(node, {}, false);
    TUNECNN_CHECK(w.ph < w.kh && w.pw < w.kw, "pads ", w.ph, "x", w.pw, " are not smaller than the ", w.kh, "x",
                  w.kw, " window: tunecnn's pooling needs a real pixel in every window");
    TUNECNN_CHECK(kind == PoolKind::max || onnx_file::int_attr(node, "count_include_pad", 0) == 0 ||
                      (w.ph == 0 && w.pw == 0),
                  "count_include_pad 1 with padding is not supported (tunecnn divides by the real pixels)");
    const PoolGeometry g{static_cast<int>(w.kh), static_cast<int>(w.kw), static_cast<int>(w.sh),
                         static_cast<int>(w.sw), static_cast<int>(w.ph), static_cast<int>(w.pw)};
    shape_ = {shape_[0], window_out(shape_[1], w.kh, w.sh, w.ph), window_out(shape_[2], w.kw, w.sw, w.pw)};
    append(std::make_shared<Pool2d>(kind, g), "pool");
  }

  // tunecnn's global average pool yields [N, C] where ONNX's yields [N, C, 1, 1]; the Flatten
  // or Reshape that follows in the file then has nothing left to do.
  void global_avg_pool() {
    require_image("GlobalAveragePool");
    shape_ = {shape_[0]};
    append(std::make_shared<GlobalAvgPool>(), "gap");
  }

  void lrn(const onnx::NodeProto& node) {
    require_image("LRN");
    const std::int64_t size = onnx_file::int_attr(node, "size", 0);
    check_range({size}, 1, "size");
    LrnParams p;
    p.size = static_cast<int>(size);
    p.alpha = onnx_file::float_attr(node, "alpha", 1e-4f);
    p.beta = onnx_file::float_attr(node, "beta", 0.75f);
    p.k = onnx_file::float_attr(node, "bias", 1.0f);
    append(std::make_shared<LocalResponseNorm>(p), "lrn");
  }

  std::int64_t features() const {
    std::int64_t n = 1;
    for (std::int64_t d : shape_) n *= d;
    return n;
  }

  void to_features() {
    if (shape_.size() == 1) return;  // already [N, features] (after a global average pool)
    shape_ = {features()};
    append(std::make_shared<Flatten>(), "flatten");
  }

  void flatten(const onnx::NodeProto& node) {
    TUNECNN_CHECK(onnx_file::int_attr(node, "axis", 1) == 1, "axis ", onnx_file::int_attr(node, "axis", 1),
                  " is not supported (1 is: [batch, features])");
    to_features();
  }

  void reshape(const onnx::NodeProto& node) {
    const std::vector<std::int64_t> to = int64_input(node, 1, "shape");
    TUNECNN_CHECK(to.size() == 2, "Reshape to ", to.size(), " dims is not supported (to [batch, features] is)");
    const std::int64_t batch = to[0], rest = to[1];
    TUNECNN_CHECK((batch == 0 || batch == -1) && (rest == -1 || rest == features()) && !(batch == -1 && rest == -1),
                  "Reshape to [", batch, ", ", rest, "] is not supported; [0 or -1, -1 or ", features(),
                  "] (to [batch, features]) is");
    to_features();
  }

  std::shared_ptr<Linear> linear(std::int64_t in, std::int64_t out) {
    TUNECNN_CHECK(shape_.size() == 1, "needs [batch, features] input; flatten first (activations ",
                  shape_str(shape_), ")");
    TUNECNN_CHECK(in == shape_[0], "its weight takes ", in, " features; the input has ", shape_[0]);
    shape_ = {out};
    return std::make_shared<Linear>(static_cast<int>(in), static_cast<int>(out), init_rng_);
  }

  void gemm(const onnx::NodeProto& node) {
    using onnx_file::float_attr, onnx_file::int_attr;
    TUNECNN_CHECK(float_attr(node, "alpha", 1) == 1 && float_attr(node, "beta", 1) == 1 &&
                      int_attr(node, "transA", 0) == 0,
                  "alpha, beta and transA other than 1, 1, 0 are not supported");
    const bool trans_b = int_attr(node, "transB", 0) == 1;
    Floats w = weight(node, 1, "B");
    TUNECNN_CHECK(w.dims.size() == 2, "B has ", w.dims.size(), " dims, not 2");
    if (!trans_b) w = transposed(w);
    auto layer = linear(w.dims[1], w.dims[0]);
    copy_into(parameter(*layer, "weight"), w, "B");
    if (const std::optional<Floats> c = optional_weight(node, 2, "C")) {
      TUNECNN_CHECK(c->values.size() == static_cast<std::size_t>(w.dims[0]), "C has ", c->values.size(),
                    " values for ", w.dims[0], " outputs (only a per-output bias is supported)");
      std::copy(c->values.begin(), c->values.end(), parameter(*layer, "bias").data<float>());
    } else {
      parameter(*layer, "bias").fill(0);
    }
    append(layer, "fc");
  }

  static Floats transposed(const Floats& w) {
    Floats t{{w.dims[1], w.dims[0]}, std::vector<float>(w.values.size())};
    for (std::int64_t i = 0; i < w.dims[0]; ++i)
      for (std::int64_t j = 0; j < w.dims[1]; ++j) t.values[j * w.dims[0] + i] = w.values[i * w.dims[1] + j];
    return t;
  }

  // MatMul by a [in, out] weight; the Add that must follow gives its bias.
  void matmul(const onnx::NodeProto& node) {
    const Floats w = weight(node, 1, "B");
    TUNECNN_CHECK(w.dims.size() == 2, "B has ", w.dims.size(), " dims, not 2");
    const Floats t = transposed(w);
    pending_linear_ = linear(t.dims[1], t.dims[0]);
    copy_into(parameter(*pending_linear_, "weight"), t, "B");
  }

  void add_bias(const onnx::NodeProto& node) {
    TUNECNN_CHECK(pending_linear_ != nullptr, "an Add is supported only as the bias of a MatMul just before it");
    const Floats b = weight(node, 1, "bias");
    copy_into(parameter(*pending_linear_, "bias"), b, "bias");
    append(std::move(pending_linear_), "fc");
  }

  void dropout(const onnx::NodeProto& node) {
    TUNECNN_CHECK(node.output_size() == 1 || node.output(1).empty(), "its mask output is not supported");
    const std::optional<float> ratio = optional_scalar(node, 1, "ratio");
    const double p = ratio ? *ratio : onnx_file::float_attr(node, "ratio", 0.5f);
    append(std::make_shared<Dropout>(p, dropout_rng_), "dropout");
  }

  // A zero Pad of H and W only, equal on both sides, folded into the next Conv's padding.
  void pad(const onnx::NodeProto& node) {
    TUNECNN_CHECK(onnx_file::string_attr(node, "mode", "constant") == "constant", "mode ",
                  onnx_file::string_attr(node, "mode", ""), " is not supported (constant zeros are)");
    TUNECNN_CHECK(optional_scalar(node, 2, "constant_value").value_or(0) == 0,
                  "a non-zero constant_value is not supported");
    const std::vector<std::int64_t> pads = int64_input(node, 1, "pads");
    TUNECNN_CHECK(pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 && pads[5] == 0 &&
                      pads[2] == pads[3] && pads[2] == pads[6] && pads[2] == pads[7] && pads[2] >= 0,
                  "only the same zero padding on all four sides of H and W is supported");
    check_range({pads[2]}, 0, "padding");
    pad_ = pads[2];
  }

  std::shared_ptr<Rng> dropout_rng_;
  std::shared_ptr<Sequential> net_;
  Rng init_rng_{1};  // layers start random; every weight is then overwritten from the file
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, onnx::TensorProto> constants_;
  std::map<std::string, int> counts_;
  std::string current_;  // the value flowing along the chain
  Shape shape_, input_;  // one example's: C, H, W or features
  std::int64_t pad_ = 0;  // from a Pad, for the next Conv
  std::shared_ptr<Linear> pending_linear_;  // a MatMul waiting for its Add
  std::vector<std::string> notes_;
};

}  // namespace

OnnxNetwork import_onnx(const std::filesystem::path& file, std::shared_ptr<Rng> dropout_rng) {
  const onnx::ModelProto model = onnx_file::load(file);
  const onnx::GraphProto& graph = model.graph();
  try {
    ChainBuilder::check_single_use(graph);
    ChainBuilder chain(graph, std::move(dropout_rng));
    for (int i = 0; i < graph.node_size(); ++i) {
      try {
        chain.add(graph.node(i), i + 1 == graph.node_size());
      } catch (const Error& e) {
        TUNECNN_FAIL(onnx_file::label(graph.node(i), i), ": ", e.message());
      }
    }
    return chain.finish(graph);
  } catch (const Error& e) {
    TUNECNN_FAIL(file.string(), ": ", onnx_file::one_line(e.message()));  // it quotes the file's names
  }
}

Shape onnx_input_shape(const std::filesystem::path& file) {
  const onnx::ModelProto model = onnx_file::load(file);
  try {
    return onnx_file::data_input(model.graph()).chw;
  } catch (const Error& e) {
    TUNECNN_FAIL(file.string(), ": ", onnx_file::one_line(e.message()));
  }
}

}  // namespace tunecnn
