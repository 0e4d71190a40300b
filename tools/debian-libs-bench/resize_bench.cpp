// Times resize + crop + normalise of a batch of images with our resize_crop and with
// stb_image_resize (libstb-dev), and compares their pixels.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "datasets/image_resize.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#include <stb_image.h>
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb_image_resize.h>

using namespace tunecnn;
namespace fs = std::filesystem;

struct Image {
  std::vector<std::uint8_t> rgb;
  int width = 0, height = 0;
};

// stb_image_resize on the crop window only (subpixel API: scale and offset), to uint8 HWC or to
// float, then the same normalise/flip/CHW step ours fuses.
enum class StbMode { kBoxTriangleU8, kBoxTriangleFloat, kDefaultU8 };

void stb_resize_crop(const Image& im, ResizedSize resized, const CropWindow& crop,
                     const ChannelAffine& norm, StbMode mode, float* out) {
  const int side = crop.side;
  const float sx = static_cast<float>(resized.width) / im.width;
  const float sy = static_cast<float>(resized.height) / im.height;
  auto filter = [&](float scale) {
    if (mode == StbMode::kDefaultU8) return STBIR_FILTER_DEFAULT;
    return scale < 1.0f ? STBIR_FILTER_BOX : STBIR_FILTER_TRIANGLE;
  };
  thread_local std::vector<std::uint8_t> u8;
  thread_local std::vector<float> f32, in_f32;
  const float* px = nullptr;
  if (mode == StbMode::kBoxTriangleFloat) {
    in_f32.assign(im.rgb.begin(), im.rgb.end());
    f32.resize(static_cast<std::size_t>(side) * side * 3);
    stbir_resize_subpixel(in_f32.data(), im.width, im.height, 0, f32.data(), side, side, 0,
                          STBIR_TYPE_FLOAT, 3, STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP,
                          STBIR_EDGE_CLAMP, filter(sx), filter(sy), STBIR_COLORSPACE_LINEAR,
                          nullptr, sx, sy, static_cast<float>(crop.x), static_cast<float>(crop.y));
    px = f32.data();
  } else {
    u8.resize(static_cast<std::size_t>(side) * side * 3);
    stbir_resize_subpixel(im.rgb.data(), im.width, im.height, 0, u8.data(), side, side, 0,
                          STBIR_TYPE_UINT8, 3, STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP,
                          STBIR_EDGE_CLAMP, filter(sx), filter(sy), STBIR_COLORSPACE_LINEAR,
                          nullptr, sx, sy, static_cast<float>(crop.x), static_cast<float>(crop.y));
    f32.assign(u8.begin(), u8.end());
    px = f32.data();
  }
  const std::size_t plane = static_cast<std::size_t>(side) * side;
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x) {
      const float* p = px + (static_cast<std::size_t>(y) * side + (crop.flip ? side - 1 - x : x)) * 3;
      for (int c = 0; c < 3; ++c)
        out[c * plane + static_cast<std::size_t>(y) * side + x] = p[c] * norm.scale[c] + norm.shift[c];
    }
}

std::vector<Image> load_photos(const fs::path& folder) {
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    if (e.path().extension() == ".JPEG") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<Image> out;
  for (const auto& p : paths) {
    Image im;
    int c = 0;
    stbi_uc* px = stbi_load(p.c_str(), &im.width, &im.height, &c, 3);
    if (!px) continue;
    im.rgb.assign(px, px + static_cast<std::size_t>(im.width) * im.height * 3);
    stbi_image_free(px);
    out.push_back(std::move(im));
  }
  return out;
}

// A w x h photograph-like image: the 224x224 photos tiled (real content, with seams).
Image tile(const std::vector<Image>& photos, std::size_t first, int w, int h) {
  Image im{std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h * 3), w, h};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const Image& src = photos[(first + (y / 224) * 3 + x / 224) % photos.size()];
      const int sx = x % 224 % src.width, sy = y % 224 % src.height;
      std::copy_n(&src.rgb[(static_cast<std::size_t>(sy) * src.width + sx) * 3], 3,
                  &im.rgb[(static_cast<std::size_t>(y) * w + x) * 3]);
    }
  return im;
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::stoi(argv[1]) : 7;
  const std::vector<Image> photos = load_photos("/work/shared/data/imagenette-mini");
  std::printf("%zu photos from imagenette-mini\n", photos.size());
  struct Case {
    std::string name;
    std::vector<Image> images;
    int resize_side, side;
  };
  std::vector<Case> cases;
  {
    Case c{"500x375 (tiled real photos) -> shorter side 256, crop 224 (shrink: area)", {}, 256, 224};
    for (std::size_t i = 0; i < 64; ++i) c.images.push_back(tile(photos, i * 7, 500, 375));
    cases.push_back(std::move(c));
  }
  {
    Case c{"224x224 imagenette-mini photos -> shorter side 256, crop 224 (enlarge: bilinear)", {}, 256, 224};
    for (std::size_t i = 0; i < 64; ++i) c.images.push_back(photos[i * 3 % photos.size()]);
    cases.push_back(std::move(c));
  }
  {
    Case c{"2000x1500 (tiled real photos) -> shorter side 256, crop 224 (shrink: area)", {}, 256, 224};
    for (std::size_t i = 0; i < 8; ++i) c.images.push_back(tile(photos, i * 11, 2000, 1500));
    cases.push_back(std::move(c));
  }
  ChannelAffine identity;
  ChannelAffine imagenet;
  const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
  for (int c = 0; c < 3; ++c) {
    imagenet.scale[c] = 1.0f / (255.0f * stdv[c]);
    imagenet.shift[c] = -mean[c] / stdv[c];
  }
  const std::pair<const char*, StbMode> stb_modes[] = {
      {"stb box/triangle, uint8 out", StbMode::kBoxTriangleU8},
      {"stb box/triangle, float in+out", StbMode::kBoxTriangleFloat},
      {"stb default (Mitchell/Catmull-Rom), uint8", StbMode::kDefaultU8}};
  for (const Case& c : cases) {
    std::printf("\n%s, batch of %zu, random crops with flips, %d repetitions interleaved:\n",
                c.name.c_str(), c.images.size(), reps);
    std::mt19937_64 rng(1);
    std::vector<CropWindow> crops;
    std::vector<ResizedSize> sizes;
    for (const Image& im : c.images) {
      const ResizedSize r = resized_size(im.width, im.height, c.resize_side);
      sizes.push_back(r);
      crops.push_back({static_cast<int>(rng() % (r.width - c.side + 1)),
                       static_cast<int>(rng() % (r.height - c.side + 1)), c.side, (rng() & 1) != 0});
    }
    const std::size_t n = static_cast<std::size_t>(3) * c.side * c.side;
    std::vector<float> ours(n), theirs(n);
    // Pixel differences on the 0..255 scale.
    for (const auto& [label, mode] : stb_modes) {
      double max_diff = 0, sum = 0;
      std::size_t count = 0, over1 = 0;
      for (std::size_t i = 0; i < c.images.size(); ++i) {
        const Image& im = c.images[i];
        resize_crop(im.rgb.data(), im.width, im.height, sizes[i], crops[i], identity, ours.data());
        stb_resize_crop(im, sizes[i], crops[i], identity, mode, theirs.data());
        for (std::size_t k = 0; k < n; ++k) {
          const double d = std::abs(ours[k] - theirs[k]);
          max_diff = std::max(max_diff, d);
          sum += d;
          over1 += d > 1.0;
          ++count;
        }
      }
      std::printf("  %-42s vs ours: max |diff| %.3f, mean %.4f (0..255 scale), %.3f%% over 1\n",
                  label, max_diff, sum / count, 100.0 * over1 / count);
    }
    std::vector<double> t_ours, t_stb, t_stbf;
    std::vector<float> out(n);
    auto time = [&](auto&& fn) {
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < c.images.size(); ++i) fn(i);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    for (int rep = 0; rep < reps; ++rep) {
      t_ours.push_back(time([&](std::size_t i) {
        const Image& im = c.images[i];
        resize_crop(im.rgb.data(), im.width, im.height, sizes[i], crops[i], imagenet, out.data());
      }));
      t_stb.push_back(time([&](std::size_t i) {
        stb_resize_crop(c.images[i], sizes[i], crops[i], imagenet, StbMode::kBoxTriangleU8, out.data());
      }));
      t_stbf.push_back(time([&](std::size_t i) {
        stb_resize_crop(c.images[i], sizes[i], crops[i], imagenet, StbMode::kBoxTriangleFloat, out.data());
      }));
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double mo = median(t_ours), ms = median(t_stb), mf = median(t_stbf);
    const double per = 1e3 / c.images.size();
    std::printf("  ours resize_crop:                 median %.3f ms/image\n", mo * per);
    std::printf("  stb box/triangle uint8 + CHW:     median %.3f ms/image (%.2fx ours)\n", ms * per, ms / mo);
    std::printf("  stb box/triangle float + CHW:     median %.3f ms/image (%.2fx ours)\n", mf * per, mf / mo);
  }
}
