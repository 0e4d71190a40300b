// LeNet as in Li et al. (SC'16) Table 1: conv 5x5 1->16 on 28x28 (padded to keep 28x28),
// pool 2/2, conv 5x5 16->16 on 14x14, pool 2/2, one hidden fully-connected layer, 10 classes.
// The hidden width (500) is Caffe's LeNet; the paper does not give it.
#include "models/lenet.h"

#include "ops/conv/conv2d.h"
#include "ops/flatten.h"
#include "ops/linear.h"
#include "ops/pool/pool2d.h"
#include "ops/relu.h"

namespace tunecnn {
namespace {
constexpr int kChannels = 16;
constexpr int kHidden = 500;
}  // namespace

std::shared_ptr<Sequential> build_lenet(const ModelOptions& options, Rng& rng) {
  const Shape& in = options.input_shape;
  TUNECNN_CHECK(in.size() == 3 && in[1] % 4 == 0 && in[2] % 4 == 0, "LeNet needs C,H,W input with H and W "
                "divisible by 4 (two 2x2 pools), got ", shape_str(in));
  const int channels = static_cast<int>(in[0]);
  const int features = kChannels * static_cast<int>(in[1] / 4 * in[2] / 4);
  auto net = std::make_shared<Sequential>();
  net->add(std::make_shared<Conv2d>(channels, kChannels, 5, 1, 2, rng), "conv1")
      .add(std::make_shared<ReLU>(), "relu1")
      .add(std::make_shared<MaxPool2d>(2, 2), "pool1")
      .add(std::make_shared<Conv2d>(kChannels, kChannels, 5, 1, 2, rng), "conv2")
      .add(std::make_shared<ReLU>(), "relu2")
      .add(std::make_shared<MaxPool2d>(2, 2), "pool2")
      .add(std::make_shared<Flatten>(), "flatten")
      .add(std::make_shared<Linear>(features, kHidden, rng), "fc1")
      .add(std::make_shared<ReLU>(), "relu3")
      .add(std::make_shared<Linear>(kHidden, options.num_classes, rng), "fc2");
  return net;
}

}  // namespace tunecnn
