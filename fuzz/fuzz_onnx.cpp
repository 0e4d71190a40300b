// ONNX import (models/onnx_import.h): the input is the .onnx file, read by onnx_input_shape and
// import_onnx. A refusal must be a tunecnn::Error that names the file and quotes none of its
// bytes raw (printable(): a name in the file may hold a terminal escape). A network that imports
// then runs a forward pass on zero images, in evaluation mode (predict) and in training mode
// (train): an Error there means the importer accepted a network it cannot run, so it aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/module.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "fuzz/fuzz_support.h"
#include "models/onnx_import.h"
#include "ops/conv/conv2d.h"
#include "ops/pool/pool2d.h"

namespace {

using namespace tunecnn;

// A legitimately huge network (a 1x1 conv to 1,024 channels on a 4,096 x 4,096 input is a valid
// file of a few KB, and its output 64 GiB) would exhaust the fuzzer's memory or time limits in
// the forward pass without any bug in the importer. Such a network still imports; its forward
// pass stops before the first layer over these bounds, which are far above the seeds' tiny
// networks and keep each layer well under a second under the sanitizers.
constexpr double kMaxParameters = 1 << 20;
constexpr double kMaxActivation = 1 << 20;  // elements of one layer's output
constexpr double kMaxMacs = 1 << 24;        // multiply-adds of one conv or pooling layer

// In double: the shapes of a hostile file may overflow any integer product.
double elements(const Shape& shape) {
  double n = 1;
  for (std::int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

// Whether `layer`'s forward pass on `input` stays within the bounds above. Only conv and pooling
// layers can make their output larger than their input or their parameters.
bool affordable(const Module& layer, const Shape& input) {
  if (const auto* conv = dynamic_cast<const Conv2d*>(&layer)) {
    const ConvProblem p = conv->problem_for(input);
    const double out = elements(p.dst_shape());
    return out <= kMaxActivation && out * (p.ic / p.g) * p.kh * p.kw <= kMaxMacs;
  }
  if (const auto* pool = dynamic_cast<const Pool2d*>(&layer)) {
    const PoolProblem p = pool->problem_for(input);
    const double out = elements(p.dst_shape());
    return out <= kMaxActivation && out * p.kh * p.kw <= kMaxMacs;
  }
  return true;
}

// Runs `model` layer by layer on a zero batch, stopping before a layer over the bounds.
void forward(Sequential& model, const Shape& chw, std::int64_t batch_size) {
  Shape batch = chw;
  batch.insert(batch.begin(), batch_size);
  if (elements(batch) > kMaxActivation) return;
  Variable x(Tensor::zeros(batch));
  for (std::size_t i = 0; i < model.size(); ++i) {
    if (!affordable(model.layer(i), x.shape())) return;
    x = model.layer(i).forward(x);
  }
}

// A refusal the user can act on: it names the file, and every byte of it is printable.
void check_refusal(const Error& e, const std::string& path) {
  const std::string& text = e.message();
  if (text.find(path) != std::string::npos && printable(text) == text) return;
  std::fprintf(stderr, "fuzz_onnx: a refusal that does not name %s or quotes control bytes: %s\n",
               path.c_str(), printable(text).c_str());
  std::abort();
}

// An imported network's forward pass throws nothing: the importer checked its shapes.
void run_both_modes(const OnnxNetwork& net) {
  try {
    net.model->eval();
    forward(*net.model, net.input, 1);
    // Two examples: batch normalisation in training needs more than one value per channel,
    // which one example of 1 x 1 pixels does not give it.
    net.model->train();
    forward(*net.model, net.input, 2);
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz_onnx: an imported network fails its forward pass: %s\n",
                 printable(e.what()).c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz::write_temp("net.onnx", fuzz::as_text(data, size));
  try {
    (void)onnx_input_shape(path);
  } catch (const Error& e) {
    check_refusal(e, path.string());
  }
  OnnxNetwork net;
  try {
    net = import_onnx(path, std::make_shared<Rng>(1));
  } catch (const Error& e) {
    check_refusal(e, path.string());
    return 0;
  }
  (void)net.model->describe();
  if (static_cast<double>(parameter_count(*net.model)) <= kMaxParameters) run_both_modes(net);
  return 0;
}
