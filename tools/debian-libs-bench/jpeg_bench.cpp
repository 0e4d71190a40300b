// Decode + resize + centre crop of large JPEGs: stb_image full decode then our resize_crop (the
// pipeline now), against libjpeg-turbo full decode, and libjpeg-turbo DCT-scaled decode (the
// largest M/8 scale whose shorter side still is >= the resize side) then our resize_crop.
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/image_resize.h"

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

Image decode_turbo(const Bytes& jpeg, int min_side) {
  jpeg_decompress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, jpeg.data(), jpeg.size());
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  if (min_side > 0) {
    const int shorter = static_cast<int>(std::min(info.image_width, info.image_height));
    int m = 8;
    while (m > 1 && (shorter * (m - 1) + 7) / 8 >= min_side) --m;
    info.scale_num = m;
    info.scale_denom = 8;
  }
  jpeg_start_decompress(&info);
  Image im{std::vector<std::uint8_t>(static_cast<std::size_t>(info.output_width) * info.output_height * 3),
           static_cast<int>(info.output_width), static_cast<int>(info.output_height)};
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = &im.rgb[static_cast<std::size_t>(info.output_scanline) * im.width * 3];
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return im;
}

Image decode_stb(const Bytes& jpeg) {
  Image im;
  int c = 0;
  stbi_uc* px = stbi_load_from_memory(jpeg.data(), static_cast<int>(jpeg.size()), &im.width, &im.height, &c, 3);
  im.rgb.assign(px, px + static_cast<std::size_t>(im.width) * im.height * 3);
  stbi_image_free(px);
  return im;
}

// The resized size follows from the file's own size (w, h), so a scaled decode lands on the same
// resized grid as a full one.
void resize_centre(const Image& im, int w, int h, int resize_side, int side, float* out) {
  const ResizedSize r = resized_size(w, h, resize_side);
  resize_crop(im.rgb.data(), im.width, im.height, r, {(r.width - side) / 2, (r.height - side) / 2, side, false},
              ChannelAffine{}, out);
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::stoi(argv[1]) : 5;
  std::vector<Image> photos;
  for (const auto& e : fs::recursive_directory_iterator("/work/shared/data/imagenette-mini"))
    if (e.path().extension() == ".JPEG") photos.push_back(decode_stb([&] {
      std::FILE* f = std::fopen(e.path().c_str(), "rb");
      Bytes b(fs::file_size(e.path()));
      std::fread(b.data(), 1, b.size(), f);
      std::fclose(f);
      return b;
    }()));
  for (const auto [w, h] : {std::pair{500, 375}, std::pair{2000, 1500}}) {
    // JPEGs of tiled real photos (quality 90), as large photographs.
    std::vector<Bytes> jpegs;
    for (std::size_t i = 0; i < 16; ++i) {
      Image im{std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h * 3), w, h};
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const Image& s = photos[(i * 13 + (y / 224) * 9 + x / 224) % photos.size()];
          std::copy_n(&s.rgb[(static_cast<std::size_t>(y % 224 % s.height) * s.width + x % 224 % s.width) * 3], 3,
                      &im.rgb[(static_cast<std::size_t>(y) * w + x) * 3]);
        }
      Bytes out;
      stbi_write_jpg_to_func([](void* ctx, void* data, int n) {
        auto* b = static_cast<Bytes*>(ctx);
        b->insert(b->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + n);
      }, &out, w, h, 3, im.rgb.data(), 90);
      jpegs.push_back(std::move(out));
    }
    const int side = 224, resize_side = 256, n = 3 * side * side;
    std::vector<float> a(n), b(n);
    double max_full = 0, sum_full = 0, max_scaled = 0, sum_scaled = 0;
    for (const Bytes& j : jpegs) {
      resize_centre(decode_stb(j), w, h, resize_side, side, a.data());
      resize_centre(decode_turbo(j, 0), w, h, resize_side, side, b.data());
      for (int k = 0; k < n; ++k) {
        max_full = std::max<double>(max_full, std::abs(a[k] - b[k]));
        sum_full += std::abs(a[k] - b[k]);
      }
      resize_centre(decode_turbo(j, resize_side), w, h, resize_side, side, b.data());
      for (int k = 0; k < n; ++k) {
        max_scaled = std::max<double>(max_scaled, std::abs(a[k] - b[k]));
        sum_scaled += std::abs(a[k] - b[k]);
      }
    }
    const Image scaled = decode_turbo(jpegs[0], resize_side);
    std::printf("\n%dx%d JPEGs (q90, tiled real photos), %zu of them, decode + resize 256 + centre crop 224, %d reps:\n",
                w, h, jpegs.size(), reps);
    std::printf("  libjpeg-turbo full decode vs stb_image:   max |diff| %.2f, mean %.3f (0..255)\n", max_full,
                sum_full / (static_cast<double>(n) * jpegs.size()));
    std::printf("  libjpeg-turbo scaled (to %dx%d) vs stb:  max |diff| %.2f, mean %.3f (0..255)\n", scaled.width,
                scaled.height, max_scaled, sum_scaled / (static_cast<double>(n) * jpegs.size()));
    std::vector<double> t[3];
    for (int rep = 0; rep < reps; ++rep)
      for (int v = 0; v < 3; ++v) {
        const auto start = std::chrono::steady_clock::now();
        for (const Bytes& j : jpegs)
          resize_centre(v == 0 ? decode_stb(j) : decode_turbo(j, v == 2 ? resize_side : 0), w, h, resize_side, side, a.data());
        t[v].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3 / jpegs.size());
      }
    const char* names[3] = {"stb_image + ours", "libjpeg-turbo full + ours", "libjpeg-turbo scaled + ours"};
    double base = 0;
    for (int v = 0; v < 3; ++v) {
      std::sort(t[v].begin(), t[v].end());
      const double m = t[v][t[v].size() / 2];
      if (v == 0) base = m;
      std::printf("  %-28s median %.2f ms/image (%.2fx stb)\n", names[v], m, m / base);
    }
  }
}
