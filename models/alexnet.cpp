// AlexNet (Krizhevsky, Sutskever, Hinton 2012) as a single tower: the paper split conv2, conv4,
// conv5 and the fully connected layers over two GPUs; here every layer sees all channels
// (groups 1, the shapes of conv_layers.txt; Caffe's bvlc_alexnet keeps the split as groups 2).
// Input 227x227: the paper's "224" does not divide, (227 - 11) / 4 + 1 = 55.
// Local response normalisation follows the ReLUs of conv1 and conv2, before their pools, with the
// paper's n = 5, alpha = 1e-4, beta = 0.75, k = 2 (alpha divided by n as PyTorch and Caffe do; see
// ops/lrn.h), so this is the network of the paper and of the PyTorch comparison.
//
// Pools are 3/2 in floor mode, as AlexNet's own: 55 -> 27 -> 13 -> 6.
#include "models/alexnet.h"

#include <cstdint>
#include <string>

#include "ops/conv/conv2d.h"
#include "ops/dropout.h"
#include "ops/flatten.h"
#include "ops/linear.h"
#include "ops/lrn.h"
#include "ops/pool/pool2d.h"
#include "ops/relu.h"

namespace tunecnn {
namespace {
constexpr std::int64_t kSide = 227;
constexpr int kFeatures = 256 * 6 * 6;
constexpr int kHidden = 4096;
constexpr double kDropout = 0.5;
constexpr LrnParams kLrn{.size = 5, .alpha = 1e-4, .beta = 0.75, .k = 2.0};  // the paper's

void add_conv(Sequential& net, int index, int in, int out, int kernel, int stride, int padding,
              Rng& rng) {
  const std::string n = std::to_string(index);
  net.add(std::make_shared<Conv2d>(in, out, kernel, stride, padding, rng), "conv" + n)
      .add(std::make_shared<ReLU>(), "relu" + n);
}

void add_lrn(Sequential& net, int index) {
  net.add(std::make_shared<LocalResponseNorm>(kLrn), "lrn" + std::to_string(index));
}

void add_pool(Sequential& net, int index) {
  net.add(std::make_shared<MaxPool2d>(3, 2), "pool" + std::to_string(index));
}

void add_hidden_fc(Sequential& net, int index, int in, const std::shared_ptr<Rng>& dropout_rng,
                   Rng& rng) {
  const std::string n = std::to_string(index);
  net.add(std::make_shared<Linear>(in, kHidden, rng), "fc" + n)
      .add(std::make_shared<ReLU>(), "relu_fc" + n)
      .add(std::make_shared<Dropout>(kDropout, dropout_rng), "drop" + n);
}
}  // namespace

std::shared_ptr<Sequential> build_alexnet(const ModelOptions& options, Rng& rng) {
  const Shape expected{3, kSide, kSide};
  TUNECNN_CHECK(options.input_shape == expected, "alexnet needs input ", shape_str(expected),
                " (C,H,W), got ", shape_str(options.input_shape));
  // The trainer passes its dropout RNG, whose state goes into checkpoints.
  auto dropout_rng =
      options.dropout_rng ? options.dropout_rng : std::make_shared<Rng>(rng.next_u64());
  auto net = std::make_shared<Sequential>();
  add_conv(*net, 1, 3, 96, 11, 4, 0, rng);
  add_lrn(*net, 1);
  add_pool(*net, 1);
  add_conv(*net, 2, 96, 256, 5, 1, 2, rng);
  add_lrn(*net, 2);
  add_pool(*net, 2);
  add_conv(*net, 3, 256, 384, 3, 1, 1, rng);
  add_conv(*net, 4, 384, 384, 3, 1, 1, rng);
  add_conv(*net, 5, 384, 256, 3, 1, 1, rng);
  add_pool(*net, 5);
  net->add(std::make_shared<Flatten>(), "flatten");
  add_hidden_fc(*net, 6, kFeatures, dropout_rng, rng);
  add_hidden_fc(*net, 7, kHidden, dropout_rng, rng);
  net->add(std::make_shared<Linear>(kHidden, options.num_classes, rng), "fc8");
  return net;
}

}  // namespace tunecnn
