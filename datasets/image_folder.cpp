// The reader decodes each file in a TBB task and keeps the results in file order, so the data set
// (and its warnings) are the same whatever the thread count. Files are read into memory first and
// handed to stb_image from there: an unreadable file and an undecodable one then report alike.
// The crop is sampled straight from the source: only the side x side window of the resized image
// is ever computed.
#include "datasets/image_folder.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

#include "core/error.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
// cmake/dependencies.cmake finds the folder holding stb_image.h (Debian: /usr/include/stb).
#include <stb_image.h>

namespace tunecnn {
namespace {

constexpr int kChannels = 3;
// torchvision's ImageNet evaluation: resize to 256, crop 224.
constexpr double kResizeRatio = 256.0 / 224.0;
const std::vector<float> kMean = {0.485f, 0.456f, 0.406f};
const std::vector<float> kStd = {0.229f, 0.224f, 0.225f};

struct ImageFile {
  std::filesystem::path path;
  std::int32_t label;
};

bool is_image(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

std::vector<std::filesystem::path> sorted_entries(const std::filesystem::path& folder,
                                                  bool directories) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (directories ? entry.is_directory() : entry.is_regular_file() && is_image(entry.path()))
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Bilinear with pixel centres aligned (PyTorch's align_corners=False): resized pixel x samples
// the source at (x + 0.5) * scale - 0.5, clamped to the image.
struct Taps {
  std::vector<int> lo, hi;
  std::vector<float> frac;
};

Taps taps(int source, int resized, int offset, int count) {
  Taps t;
  const double scale = static_cast<double>(source) / resized;
  for (int i = 0; i < count; ++i) {
    const double at = std::clamp((i + offset + 0.5) * scale - 0.5, 0.0, source - 1.0);
    const int lo = static_cast<int>(at);
    t.lo.push_back(lo);
    t.hi.push_back(std::min(lo + 1, source - 1));
    t.frac.push_back(static_cast<float>(at - lo));
  }
  return t;
}

// `rgb` is HWC, w x h. Resizes the shorter side to round(side * 256 / 224), the other in
// proportion, and writes the centre side x side window to `out` as CHW.
void resize_and_crop(const std::uint8_t* rgb, int w, int h, int side, std::uint8_t* out) {
  const double target = std::round(side * kResizeRatio);
  const double factor = target / std::min(w, h);
  const int rw = std::max(side, static_cast<int>(std::lround(w * factor)));
  const int rh = std::max(side, static_cast<int>(std::lround(h * factor)));
  const Taps xs = taps(w, rw, (rw - side) / 2, side);
  const Taps ys = taps(h, rh, (rh - side) / 2, side);
  const std::size_t plane = static_cast<std::size_t>(side) * side;
  for (int y = 0; y < side; ++y) {
    const std::uint8_t* top = rgb + static_cast<std::size_t>(ys.lo[y]) * w * kChannels;
    const std::uint8_t* bottom = rgb + static_cast<std::size_t>(ys.hi[y]) * w * kChannels;
    const float fy = ys.frac[y];
    for (int x = 0; x < side; ++x) {
      const int l = xs.lo[x] * kChannels, r = xs.hi[x] * kChannels;
      const float fx = xs.frac[x];
      for (int c = 0; c < kChannels; ++c) {
        const float upper = top[l + c] + fx * (top[r + c] - top[l + c]);
        const float lower = bottom[l + c] + fx * (bottom[r + c] - bottom[l + c]);
        const float value = upper + fy * (lower - upper);
        out[c * plane + static_cast<std::size_t>(y) * side + x] =
            static_cast<std::uint8_t>(std::clamp(std::lround(value), 0L, 255L));
      }
    }
  }
}

// Decodes one file into `out` (3 x side x side); returns why it could not, or "" when it did.
std::string decode(const std::filesystem::path& path, int side, std::uint8_t* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open the file";
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
  if (in.bad()) return "cannot read the file";
  int w = 0, h = 0, channels = 0;
  std::uint8_t* rgb =
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            static_cast<int>(bytes.size()), &w, &h, &channels, kChannels);
  if (rgb == nullptr) {
    const char* reason = stbi_failure_reason();
    return std::string("not decodable (stb_image: ") + (reason ? reason : "no reason") + ")";
  }
  resize_and_crop(rgb, w, h, side, out);
  stbi_image_free(rgb);
  return {};
}

// "imagenette-mini" for "data/imagenette-mini/" as for "data/imagenette-mini".
std::string folder_name(const std::filesystem::path& root) {
  std::filesystem::path path = std::filesystem::absolute(root).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  return path.filename().empty() ? root.string() : path.filename().string();
}

}  // namespace

std::shared_ptr<ImageDataset> load_image_folder(const std::filesystem::path& root,
                                                const std::string& split,
                                                const ImageFolderOptions& options) {
  const std::filesystem::path folder = root / split;
  TUNECNN_CHECK(options.side > 0, "image folder ", folder.string(), ": side must be positive, got ",
                options.side);
  TUNECNN_CHECK(std::filesystem::is_directory(folder), "image folder ", folder.string(),
                " does not exist (expected ROOT/", split, "/<class>/*.JPEG)");
  const std::vector<std::filesystem::path> classes = sorted_entries(folder, true);
  TUNECNN_CHECK(!classes.empty(), "image folder ", folder.string(),
                " has no class folders (expected ", folder.string(), "/<class>/*.JPEG)");

  std::vector<ImageFile> files;
  for (std::size_t label = 0; label < classes.size(); ++label)
    for (std::filesystem::path& path : sorted_entries(classes[label], false))
      files.push_back({std::move(path), static_cast<std::int32_t>(label)});
  TUNECNN_CHECK(!files.empty(), "image folder ", folder.string(),
                " holds no images (.jpg, .jpeg, .png) in its ", classes.size(), " class folders");

  // Every file decodes into its own slot; the slots of skipped files are closed up afterwards.
  const std::size_t example = static_cast<std::size_t>(kChannels) * options.side * options.side;
  std::vector<std::uint8_t> pixels(files.size() * example);
  std::vector<std::string> errors(files.size());
  tbb::parallel_for(std::size_t{0}, files.size(), [&](std::size_t i) {
    errors[i] = decode(files[i].path, options.side, pixels.data() + i * example);
  });

  const auto warn = options.warn ? options.warn : [](std::string_view message) {
    std::cerr << "warning: " << message << "\n";
  };
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!errors[i].empty()) {
      warn("skipping " + files[i].path.string() + ": " + errors[i]);
      continue;
    }
    if (labels.size() < i)  // forward copy into an earlier, non-overlapping slot
      std::copy_n(pixels.begin() + i * example, example, pixels.begin() + labels.size() * example);
    labels.push_back(files[i].label);
  }
  pixels.resize(labels.size() * example);
  const std::size_t skipped = files.size() - labels.size();
  TUNECNN_CHECK(!labels.empty(), "image folder ", folder.string(), ": none of its ", files.size(),
                " images could be decoded");

  const Shape shape{kChannels, options.side, options.side};
  const std::string description =
      folder_name(root) + " " + split + ", " + std::to_string(labels.size()) + " images " +
      std::to_string(kChannels) + "x" + std::to_string(options.side) + "x" +
      std::to_string(options.side) + ", " + std::to_string(classes.size()) + " classes, " +
      std::to_string(skipped) + " skipped";
  auto dataset = std::make_shared<ImageDataset>(
      description, shape, static_cast<int>(classes.size()), std::move(pixels), std::move(labels));
  dataset->set_normalisation(kMean, kStd);
  return dataset;
}

}  // namespace tunecnn
