// One JPEG decoded to RGB by libjpeg-turbo's libjpeg API (Debian's libjpeg62-turbo-dev), from
// memory. The header is read first, so a caller can refuse a file by its claimed size before any
// pixel is decoded. Every failure comes back as text (libjpeg's own message): nothing is printed
// and nothing exits, and a file that ends early is a failure, not a grey-filled image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tunecnn {

// True when `bytes` starts like a JPEG marker (FF): PNG and the rest go to stb_image. libjpeg
// then requires the start marker FF D8 and names the first bytes when they are not.
bool looks_like_jpeg(const unsigned char* bytes, std::size_t size);

class JpegDecoder {
 public:
  // `bytes` must outlive the decoder.
  JpegDecoder(const unsigned char* bytes, std::size_t size);
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Reads the markers up to the first scan: "" and the size, else why not.
  std::string read_header(int& width, int& height);
  // After read_header: decodes to `rgb` (HWC, 3 channels): "" on success, else why not.
  // Grayscale, YCbCr and RGB files convert in libjpeg; CMYK and YCCK (Adobe) convert here.
  std::string decode(std::vector<std::uint8_t>& rgb);

 private:
  struct State;  // libjpeg's structs and the jump buffer: jpeglib.h stays out of this header
  std::unique_ptr<State> state_;
};

}  // namespace tunecnn
