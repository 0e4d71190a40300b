#pragma once
// MobileNet v1 (Howard et al. 2017): a 3x3 stride-2 conv, 13 depthwise-separable blocks (3x3
// depthwise + BatchNorm + ReLU6, 1x1 pointwise + BatchNorm + ReLU6), global average pooling and
// one fully connected layer. The width multiplier scales every channel count; the resolution is
// the input side the model is named for.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/module.h"
#include "models/registry.h"

namespace tunecnn {

struct MobileNetConfig {
  double width = 1.0;   // 1.0, 0.75, 0.5 or 0.25
  int resolution = 224;  // 224, 192, 160 or 128
};

// "mobilenet" (1.0 at 224), "mobilenet-0.5" (0.5 at 224), "mobilenet-0.5-128"; nullopt for a name
// that is not a MobileNet at all; throws Error naming the allowed values for a MobileNet name with
// an unsupported width or resolution.
std::optional<MobileNetConfig> parse_mobilenet_name(std::string_view name);

// Every layer is a direct child of the Sequential (conv0, bn0, relu0, dw1, bn_dw1, relu_dw1, pw1,
// ...), so per-layer tools see depthwise, pointwise and BatchNorm layers one by one. Conv layers
// have no bias (BatchNorm follows each). Needs a 3-channel input; any side of at least 32.
std::shared_ptr<Sequential> build_mobilenet(const MobileNetConfig& config,
                                            const ModelOptions& options, Rng& rng);

}  // namespace tunecnn
