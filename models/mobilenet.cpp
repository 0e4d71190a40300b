// MobileNet v1 as TensorFlow-slim's mobilenet_v1 builds it: a channel count c becomes
// max(int(c * width), 8), so 0.25 gives 8, 16, 32, ... 256 (Keras' MobileNet takes
// int(c * width) too; the floor of 8 never bites at the supported widths). With BatchNorm's gamma
// and beta counted (not its running statistics), width 1.0 at 1000 classes has 4,231,976
// parameters, the figure PyTorch ports of the model report and the paper rounds to 4.2M.
//
// The spatial side only changes the activations, not the weights: global average pooling ends
// every resolution in [N, 1024 * width], so the same builder serves 224, 192, 160 and 128.
#include "models/mobilenet.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "ops/batch_norm.h"
#include "ops/conv/conv2d.h"
#include "ops/global_avg_pool.h"
#include "ops/linear.h"
#include "ops/relu.h"

namespace tunecnn {
namespace {

constexpr std::string_view kPrefix = "mobilenet";
constexpr std::array<double, 4> kWidths = {1.0, 0.75, 0.5, 0.25};
constexpr std::array<int, 4> kResolutions = {224, 192, 160, 128};
constexpr std::string_view kAllowed =
    "expected mobilenet, mobilenet-W or mobilenet-W-R with width W one of 1.0, 0.75, 0.5, 0.25 and "
    "resolution R one of 224, 192, 160, 128 (e.g. mobilenet-0.5-128)";
constexpr int kStemChannels = 32;
constexpr int kMinChannels = 8;
constexpr std::int64_t kMinSide = 32;  // five stride-2 layers: 32 -> 1

struct Block {
  int out_channels, stride;
};
// Howard et al. 2017, Table 1: the depthwise layer's stride and the pointwise layer's width.
constexpr std::array<Block, 13> kBlocks = {{{64, 1},
                                            {128, 2},
                                            {128, 1},
                                            {256, 2},
                                            {256, 1},
                                            {512, 2},
                                            {512, 1},
                                            {512, 1},
                                            {512, 1},
                                            {512, 1},
                                            {512, 1},
                                            {1024, 2},
                                            {1024, 1}}};

int scaled(int channels, double width) {
  return std::max(static_cast<int>(channels * width), kMinChannels);
}

template <typename T>
bool parse_whole(std::string_view text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

// "dw1", "bn_dw1", "relu_dw1".
void add_conv_bn_relu(Sequential& net, std::shared_ptr<Conv2d> conv, int channels,
                      const std::string& name) {
  net.add(std::move(conv), name)
      .add(std::make_shared<BatchNorm2d>(channels), "bn_" + name)
      .add(std::make_shared<ReLU6>(), "relu_" + name);
}

}  // namespace

std::optional<MobileNetConfig> parse_mobilenet_name(std::string_view name) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view rest = name.substr(kPrefix.size());
  if (rest.empty()) return MobileNetConfig{};
  if (rest.front() != '-') return std::nullopt;  // "mobilenetv2" is another family
  rest.remove_prefix(1);
  const std::size_t dash = rest.find('-');
  const std::string_view width_text = rest.substr(0, dash);
  MobileNetConfig config;
  TUNECNN_CHECK(parse_whole(width_text, config.width), "model '", name, "': width '", width_text,
                "' is not a number; ", kAllowed);
  TUNECNN_CHECK(std::find(kWidths.begin(), kWidths.end(), config.width) != kWidths.end(), "model '",
                name, "': unsupported width ", width_text, "; ", kAllowed);
  if (dash == std::string_view::npos) return config;
  const std::string_view resolution_text = rest.substr(dash + 1);
  TUNECNN_CHECK(parse_whole(resolution_text, config.resolution), "model '", name, "': resolution '",
                resolution_text, "' is not a whole number; ", kAllowed);
  TUNECNN_CHECK(
      std::find(kResolutions.begin(), kResolutions.end(), config.resolution) != kResolutions.end(),
      "model '", name, "': unsupported resolution ", resolution_text, "; ", kAllowed);
  return config;
}

std::shared_ptr<Sequential> build_mobilenet(const MobileNetConfig& config,
                                            const ModelOptions& options, Rng& rng) {
  const Shape& in = options.input_shape;
  TUNECNN_CHECK(in.size() == 3 && in[0] == 3 && in[1] >= kMinSide && in[2] >= kMinSide,
                "MobileNet needs a C,H,W input with 3 channels and sides of at least ", kMinSide,
                " (built for ", shape_str({3, config.resolution, config.resolution}), "), got ",
                shape_str(in));
  auto net = std::make_shared<Sequential>();
  int channels = scaled(kStemChannels, config.width);
  net->add(std::make_shared<Conv2d>(3, channels, 3, 2, 1, rng, 1, false), "conv0")
      .add(std::make_shared<BatchNorm2d>(channels), "bn0")
      .add(std::make_shared<ReLU6>(), "relu0");
  for (std::size_t i = 0; i < kBlocks.size(); ++i) {
    const std::string n = std::to_string(i + 1);
    const int out = scaled(kBlocks[i].out_channels, config.width);
    add_conv_bn_relu(
        *net,
        std::make_shared<Conv2d>(channels, channels, 3, kBlocks[i].stride, 1, rng, channels, false),
        channels, "dw" + n);
    add_conv_bn_relu(*net, std::make_shared<Conv2d>(channels, out, 1, 1, 0, rng, 1, false), out,
                     "pw" + n);
    channels = out;
  }
  net->add(std::make_shared<GlobalAvgPool>(), "pool")
      .add(std::make_shared<Linear>(channels, options.num_classes, rng), "fc");
  return net;
}

}  // namespace tunecnn
