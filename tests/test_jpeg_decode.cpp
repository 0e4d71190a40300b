// JpegDecoder (datasets/jpeg_decode.h) on real ImageNet JPEGs against stb_image, which decoded
// them before, on colour spaces the real data lacks (CMYK and YCCK, written here with libjpeg),
// and on broken files through image_file_centre_crop, which names the file in its error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <jpeglib.h>

#define STB_IMAGE_STATIC  // the datasets library has its own copy of stb_image
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#include <stb_image.h>

#include "core/error.h"
#include "datasets/image_folder.h"
#include "datasets/jpeg_decode.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

const fs::path kImagenette = testing::shared_data_dir() / "imagenette-mini";
const fs::path kGoodJpeg = kImagenette / "train" / "n01440764" / "ILSVRC2012_val_00000293.JPEG";
const fs::path kGrayJpeg = kImagenette / "train" / "n02979186" / "ILSVRC2012_val_00006787.JPEG";

Bytes read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_all(const fs::path& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

struct Decoded {
  std::string error;
  Bytes rgb;
  int width = 0, height = 0;
};

Decoded decode(const Bytes& bytes) {
  Decoded out;
  JpegDecoder decoder(bytes.data(), bytes.size());
  out.error = decoder.read_header(out.width, out.height);
  if (out.error.empty()) out.error = decoder.decode(out.rgb);
  return out;
}

// The error image_file_centre_crop throws for `bytes` saved as `name`, or "" when none.
std::string centre_crop_error(const Bytes& bytes, const std::string& name) {
  testing::TempDir dir;
  const fs::path file = dir.path() / name;
  write_all(file, bytes);
  std::vector<float> out(3 * 8 * 8);
  try {
    image_file_centre_crop(file, 8, 9, ChannelAffine{}, out.data());
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    return what;
  }
  return {};
}

TEST(JpegDecode, RealJpegsMatchStbImage) {
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kImagenette)) {
    if (entry.path().extension() != ".JPEG") continue;
    const Bytes bytes = read_all(entry.path());
    const Decoded ours = decode(bytes);
    ASSERT_EQ(ours.error, "") << entry.path();
    int width = 0, height = 0, channels = 0;
    stbi_uc* stb = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &width, &height, &channels, 3);
    ASSERT_NE(stb, nullptr) << entry.path();
    ASSERT_EQ(ours.width, width);
    ASSERT_EQ(ours.height, height);
    ASSERT_EQ(ours.rgb.size(), std::size_t{3} * width * height);
    // The IDCTs and chroma upsampling differ, so pixels differ a little, never an image.
    double diff[3] = {0, 0, 0};
    for (std::size_t i = 0; i < ours.rgb.size(); ++i) diff[i % 3] += std::abs(ours.rgb[i] - int{stb[i]});
    stbi_image_free(stb);
    for (int c = 0; c < 3; ++c) EXPECT_LT(diff[c] / (width * height), 2.0) << entry.path() << " channel " << c;
    ++files;
  }
  EXPECT_EQ(files, 200);
}

TEST(JpegDecode, GrayscaleComesOutAsEqualRgb) {
  const Decoded gray = decode(read_all(kGrayJpeg));
  ASSERT_EQ(gray.error, "");
  ASSERT_EQ(gray.rgb.size(), std::size_t{3} * 224 * 224);
  int varied = 0;
  for (std::size_t i = 0; i < gray.rgb.size(); i += 3) {
    ASSERT_EQ(gray.rgb[i], gray.rgb[i + 1]) << "pixel " << i / 3;
    ASSERT_EQ(gray.rgb[i], gray.rgb[i + 2]) << "pixel " << i / 3;
    varied += gray.rgb[i] != gray.rgb[0];
  }
  EXPECT_GT(varied, 1000) << "a photograph, not a flat image";
}

// Four 16x16 blocks (red, green, blue, 50% grey) as Adobe writes CMYK: inverted (255 = no ink).
Bytes cmyk_jpeg(J_COLOR_SPACE stored_as) {
  const int side = 32;
  const std::uint8_t ink[4][4] = {{0, 255, 255, 0}, {255, 0, 255, 0}, {255, 255, 0, 0}, {0, 0, 0, 128}};
  Bytes pixels(static_cast<std::size_t>(side) * side * 4);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x)
      for (int c = 0; c < 4; ++c) pixels[(y * side + x) * 4 + c] = 255 - ink[(y / 16) * 2 + x / 16][c];
  jpeg_compress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &out, &size);
  info.image_width = info.image_height = side;
  info.input_components = 4;
  info.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&info);
  jpeg_set_colorspace(&info, stored_as);  // writes the Adobe marker for CMYK and YCCK
  jpeg_set_quality(&info, 100, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = &pixels[info.next_scanline * side * 4];
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  Bytes file(out, out + size);
  std::free(out);
  return file;
}

void expect_cmyk_blocks(const Decoded& d) {
  ASSERT_EQ(d.error, "");
  ASSERT_EQ(d.width, 32);
  ASSERT_EQ(d.rgb.size(), std::size_t{3} * 32 * 32);
  const int rgb[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {127, 127, 127}};
  for (int block = 0; block < 4; ++block) {
    const int y = (block / 2) * 16 + 8, x = (block % 2) * 16 + 8;  // each block's centre
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(d.rgb[(y * 32 + x) * 3 + c], rgb[block][c], 4) << "block " << block << " channel " << c;
  }
}

TEST(JpegDecode, AdobeCmykComesOutAsRgb) { expect_cmyk_blocks(decode(cmyk_jpeg(JCS_CMYK))); }

TEST(JpegDecode, AdobeYcckComesOutAsRgb) { expect_cmyk_blocks(decode(cmyk_jpeg(JCS_YCCK))); }

// libjpeg would fill the missing rows with grey and only warn; here it is an error.
TEST(JpegDecode, ATruncatedFileIsAnErrorNamingIt) {
  Bytes bytes = read_all(kGoodJpeg);
  bytes.resize(bytes.size() / 2);
  EXPECT_EQ(decode(bytes).error, "Premature end of JPEG file");
  const std::string error = centre_crop_error(bytes, "cut.JPEG");
  EXPECT_NE(error.find("not decodable (libjpeg-turbo: Premature end of JPEG file)"), std::string::npos) << error;
}

TEST(JpegDecode, AFileMissingOnlyItsEndMarkerIsAnError) {
  Bytes bytes = read_all(kGoodJpeg);
  ASSERT_EQ(bytes[bytes.size() - 2], 0xFF);
  ASSERT_EQ(bytes.back(), 0xD9);
  bytes.resize(bytes.size() - 2);
  EXPECT_EQ(decode(bytes).error, "Premature end of JPEG file");
}

TEST(JpegDecode, GarbageIsAnErrorNamingTheFile) {
  Bytes noise(3000);
  std::uint64_t state = 3;
  for (auto& b : noise) b = static_cast<std::uint8_t>((state = state * 6364136223846793005ull + 1) >> 56);
  noise[0] = 0xFF, noise[1] = 0xD8;  // a start marker, then noise: libjpeg's
  std::string error = centre_crop_error(noise, "noise.JPEG");
  EXPECT_NE(error.find("not decodable (libjpeg-turbo: "), std::string::npos) << error;
  noise[0] = 'x';  // no JPEG, no PNG: stb_image's
  error = centre_crop_error(noise, "noise.JPEG");
  EXPECT_NE(error.find("not decodable (stb_image: "), std::string::npos) << error;
}

// The header is read, the size refused, nothing decoded (20000x20000 would take 1.2 GB).
TEST(JpegDecode, AHugeHeaderIsRefusedBeforeDecoding) {
  Bytes bytes = read_all(kGoodJpeg);
  std::size_t frame = 0;  // SOF0 or SOF2: FF C0/C2, length, precision, height, width
  for (std::size_t i = 0; i + 9 < bytes.size() && frame == 0; ++i)
    if (bytes[i] == 0xFF && (bytes[i + 1] == 0xC0 || bytes[i + 1] == 0xC2)) frame = i;
  ASSERT_NE(frame, 0u);
  for (std::size_t at : {frame + 5, frame + 7}) bytes[at] = 20000 >> 8, bytes[at + 1] = 20000 & 0xFF;
  JpegDecoder decoder(bytes.data(), bytes.size());
  int width = 0, height = 0;
  EXPECT_EQ(decoder.read_header(width, height), "");
  EXPECT_EQ(width, 20000);
  EXPECT_EQ(height, 20000);
  const std::string error = centre_crop_error(bytes, "huge.JPEG");
  EXPECT_NE(error.find("claims 20000x20000 pixels, over the 64 Mpixel"), std::string::npos) << error;
}

// Every kept fuzz input: a clean error or a decode, never a crash (the fuzz build with ASan and
// UBSan replays them too; here they run in the ordinary build). The image_folder inputs hold a
// labels file before the "--" line; only the image part after it is fed here.
TEST(JpegDecode, FuzzRegressionInputsFailCleanly) {
  const fs::path fuzz = fs::path(TUNECNN_SOURCE_DIR) / "fuzz" / "regressions";
  int inputs = 0;
  for (const char* target : {"image", "image_folder"})
    for (const auto& entry : fs::directory_iterator(fuzz / target)) {
      Bytes bytes = read_all(entry.path());
      if (std::string(target) == "image") bytes.erase(bytes.begin(), bytes.begin() + 2);  // crop, resize sides
      else {
        const std::string text(bytes.begin(), bytes.end());
        const std::size_t cut = text.find("\n--\n");
        bytes.erase(bytes.begin(), bytes.begin() + (cut == std::string::npos ? bytes.size() : cut + 4));
      }
      if (bytes.empty()) continue;
      centre_crop_error(bytes, entry.path().filename().string() + ".jpg");  // either outcome is fine
      ++inputs;
    }
  EXPECT_GE(inputs, 6);
}

}  // namespace
}  // namespace tunecnn
