#include "models/conv_layers.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace tunecnn {

extern const std::string_view kConvLayersText;  // conv_layers_text.cpp, generated

namespace {

ConvLayer parse_line(const std::string& line, std::string_view origin, int line_no, int batch) {
  std::istringstream in(line);
  ConvLayer layer;
  ConvProblem& p = layer.problem;
  in >> layer.set >> layer.name >> p.ic >> p.ih >> p.iw >> p.oc >> p.kh >> p.kw >> p.sh >> p.sw >>
      p.ph >> p.pw >> p.g;
  std::string extra;
  TUNECNN_CHECK(in && !(in >> extra), origin, ":", line_no,
                ": expected 'set layer ic ih iw oc kh kw sh sw ph pw g', got '", line, "'");
  p.mb = batch;
  try {
    p.validate();
  } catch (const Error& e) {
    TUNECNN_FAIL(origin, ":", line_no, ": ", e.message());
  }
  return layer;
}

}  // namespace

std::vector<ConvLayer> parse_conv_layers(std::string_view text, std::string_view origin,
                                         int batch) {
  TUNECNN_CHECK(batch > 0, "conv layers need a positive batch, got ", batch);
  std::vector<ConvLayer> layers;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    layers.push_back(parse_line(line, origin, line_no, batch));
  }
  return layers;
}

const std::vector<ConvLayer>& all_conv_layers() {
  static const std::vector<ConvLayer> layers =
      parse_conv_layers(kConvLayersText, "conv_layers.txt", 1);
  return layers;
}

std::vector<std::string> conv_layer_set_names() {
  std::vector<std::string> names;
  for (const ConvLayer& layer : all_conv_layers())
    if (std::find(names.begin(), names.end(), layer.set) == names.end()) names.push_back(layer.set);
  return names;
}

std::vector<ConvLayer> conv_layer_set(std::string_view set, int batch) {
  TUNECNN_CHECK(batch > 0, "conv layers need a positive batch, got ", batch);
  std::vector<ConvLayer> layers;
  for (ConvLayer layer : all_conv_layers())
    if (layer.set == set) {
      layer.problem.mb = batch;
      layers.push_back(std::move(layer));
    }
  if (layers.empty()) {
    std::string known;
    for (const std::string& name : conv_layer_set_names())
      known += (known.empty() ? "" : ", ") + name;
    TUNECNN_FAIL("unknown layer set '", set, "'; known sets: ", known);
  }
  return layers;
}

}  // namespace tunecnn
