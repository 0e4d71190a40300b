// JPEG decode time, stb_image 2.27 (what image_folder used) against datasets/jpeg_decode.cpp
// (libjpeg-turbo, what it uses now), side by side: decode only, and decode + our resize 256 +
// centre crop 224. Three sets: imagenette-mini's 200 real 224x224 JPEGs, and 16 quality-90 JPEGs
// of tiled real photos at 500x375 (ImageNet's typical size) and at 2000x1500 (a large photo).
// Rounds interleave the two decoders; each figure is the median round's ms per image.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "datasets/image_resize.h"
#include "datasets/jpeg_decode.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

using namespace tunecnn;
namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

struct Image {
  std::vector<std::uint8_t> rgb;
  int width = 0, height = 0;
};

Image decode_stb(const Bytes& jpeg) {
  Image im;
  int c = 0;
  stbi_uc* px = stbi_load_from_memory(jpeg.data(), static_cast<int>(jpeg.size()), &im.width, &im.height, &c, 3);
  if (px == nullptr) throw std::runtime_error("stb_image failed");
  im.rgb.assign(px, px + static_cast<std::size_t>(im.width) * im.height * 3);
  stbi_image_free(px);
  return im;
}

Image decode_turbo(const Bytes& jpeg) {
  Image im;
  JpegDecoder decoder(jpeg.data(), jpeg.size());
  std::string why = decoder.read_header(im.width, im.height);
  if (why.empty()) why = decoder.decode(im.rgb);
  if (!why.empty()) throw std::runtime_error("libjpeg-turbo: " + why);
  return im;
}

void resize_centre(const Image& im, float* out) {
  const ResizedSize r = resized_size(im.width, im.height, 256);
  resize_crop(im.rgb.data(), im.width, im.height, r, {(r.width - 224) / 2, (r.height - 224) / 2, 224, false},
              ChannelAffine{}, out);
}

Bytes read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// 16 JPEGs of w x h tiled from the real photos, as larger photographs.
std::vector<Bytes> tiled_jpegs(const std::vector<Image>& photos, int w, int h) {
  std::vector<Bytes> jpegs;
  for (std::size_t i = 0; i < 16; ++i) {
    std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w) * h * 3);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const Image& s = photos[(i * 13 + (y / 224) * 9 + x / 224) % photos.size()];
        std::copy_n(&s.rgb[(static_cast<std::size_t>(y % 224 % s.height) * s.width + x % 224 % s.width) * 3], 3,
                    &rgb[(static_cast<std::size_t>(y) * w + x) * 3]);
      }
    Bytes out;
    stbi_write_jpg_to_func([](void* ctx, void* data, int n) {
      auto* b = static_cast<Bytes*>(ctx);
      b->insert(b->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + n);
    }, &out, w, h, 3, rgb.data(), 90);
    jpegs.push_back(std::move(out));
  }
  return jpegs;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void compare(const char* name, const std::vector<Bytes>& jpegs, int rounds) {
  std::vector<float> out(3 * 224 * 224);
  const std::function<Image(const Bytes&)> decoders[2] = {decode_stb, decode_turbo};
  std::vector<double> ms[2][2];  // [decoder][with resize]
  for (int round = 0; round < rounds; ++round)
    for (int resize = 0; resize < 2; ++resize)
      for (int d = 0; d < 2; ++d) {
        const auto start = std::chrono::steady_clock::now();
        for (const Bytes& j : jpegs) {
          const Image im = decoders[d](j);
          if (resize) resize_centre(im, out.data());
        }
        ms[d][resize].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
                                jpegs.size());
      }
  for (int resize = 0; resize < 2; ++resize) {
    const double stb = median(ms[0][resize]), turbo = median(ms[1][resize]);
    std::printf("%-34s %-22s stb %7.3f ms  libjpeg-turbo %7.3f ms  speed-up %.2fx\n", name,
                resize ? "decode+resize+crop" : "decode only", stb, turbo, stb / turbo);
  }
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 9;
  const fs::path data = argc > 2 ? fs::path(argv[2]) : fs::path("/work/shared/data/imagenette-mini");
  std::vector<Bytes> real;
  for (const auto& e : fs::recursive_directory_iterator(data))
    if (e.path().extension() == ".JPEG") real.push_back(read_all(e.path()));
  std::sort(real.begin(), real.end());  // a fixed order whatever the directory order
  std::vector<Image> photos;
  for (const Bytes& j : real) photos.push_back(decode_stb(j));
  std::printf("median of %d rounds, ms per image, one thread\n", rounds);
  compare("224x224 imagenette-mini (200 real)", real, rounds);
  compare("500x375 tiled photos, q90 (16)", tiled_jpegs(photos, 500, 375), rounds);
  compare("2000x1500 tiled photos, q90 (16)", tiled_jpegs(photos, 2000, 1500), rounds);
}
