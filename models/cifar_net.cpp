// The CIFAR-10 net of Li et al. (SC'16) Table 1 (CV3, CV4): the convolution and pooling layers of
// cuda-convnet's layers-conv-local-11pct (24x24 crops, conv 5x5 64 pad 2 + ReLU, max pool 3/2,
// twice). That config goes on with response normalisation and two locally connected layers,
// which tunecnn lacks; the end here is layers-18pct's instead, one fully connected layer
// 64*6*6 -> classes, which keeps the net small. The conv shapes are what the autotuner measures.
//
// cuda-convnet pools in ceil mode (24 -> 12 -> 6); our pooling is floor mode, where 3/2 would
// give 24 -> 11 -> 5. Padding each pool by 1 gives 24 -> 12 -> 6, the sizes of conv_layers.txt,
// with windows shifted by one pixel against cuda-convnet's (padding never wins a max).
#include "models/cifar_net.h"

#include <cstdint>

#include "ops/conv/conv2d.h"
#include "ops/flatten.h"
#include "ops/linear.h"
#include "ops/pool/pool2d.h"
#include "ops/relu.h"

namespace tunecnn {
namespace {
constexpr int kChannels = 64;
constexpr std::int64_t kSide = 24;  // crop size; the two pools leave 6x6
constexpr int kFeatures = kChannels * 6 * 6;
}  // namespace

std::shared_ptr<Sequential> build_cifar_net(const ModelOptions& options, Rng& rng) {
  const Shape expected{3, kSide, kSide};
  TUNECNN_CHECK(options.input_shape == expected, "the cifar net needs input ", shape_str(expected),
                " (C,H,W: 24x24 crops of CIFAR-10 images), got ", shape_str(options.input_shape));
  auto net = std::make_shared<Sequential>();
  net->add(std::make_shared<Conv2d>(3, kChannels, 5, 1, 2, rng), "conv1")
      .add(std::make_shared<ReLU>(), "relu1")
      .add(std::make_shared<MaxPool2d>(3, 2, 1), "pool1")
      .add(std::make_shared<Conv2d>(kChannels, kChannels, 5, 1, 2, rng), "conv2")
      .add(std::make_shared<ReLU>(), "relu2")
      .add(std::make_shared<MaxPool2d>(3, 2, 1), "pool2")
      .add(std::make_shared<Flatten>(), "flatten")
      .add(std::make_shared<Linear>(kFeatures, options.num_classes, rng), "fc");
  return net;
}

}  // namespace tunecnn
