// libjpeg reports errors through a callback that must not return; the standard way out, used
// here, is a longjmp back to the setjmp of the JpegDecoder method that called into libjpeg. The
// functions holding a setjmp create no C++ objects between it and the libjpeg calls, so the jump
// skips no destructor. The error text is kept in the error manager, which lives in State.
#include "datasets/jpeg_decode.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>  // jpeglib.h uses FILE and size_t without including their headers

#include <jerror.h>
#include <jpeglib.h>

namespace tunecnn {

namespace {

struct ErrorManager : jpeg_error_mgr {
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = "";
};

[[noreturn]] void fail(j_common_ptr info) {
  auto* errors = static_cast<ErrorManager*>(info->err);
  errors->format_message(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// Level -1 is a warning about corrupt data. libjpeg recovers from most (at the next restart
// marker, as stb_image and Pillow do), but when the file ends early it fills the rest of the
// image with grey and carries on: that one is an error here.
void on_message(j_common_ptr info, int level) {
  if (level == -1 && info->err->msg_code == JWRN_JPEG_EOF) fail(info);
}

void print_nothing(j_common_ptr) {}

// Adobe writes CMYK and YCCK inverted (0 is full ink), which nearly every CMYK JPEG is; a plain
// CMYK file stores ink. In place: the 3-channel pixel i never overwrites a 4-channel one not yet
// read, since 3i + 2 < 4i for i >= 1 and pixel 0 is read before it is written.
void cmyk_to_rgb(std::vector<std::uint8_t>& pixels, bool adobe_inverted) {
  const std::size_t count = pixels.size() / 4;
  for (std::size_t i = 0; i < count; ++i) {
    int ink[4];
    for (int c = 0; c < 4; ++c) ink[c] = adobe_inverted ? pixels[4 * i + c] : 255 - pixels[4 * i + c];
    // ink[] now holds 255 - ink: the light each channel lets through.
    for (int c = 0; c < 3; ++c) pixels[3 * i + c] = static_cast<std::uint8_t>((ink[c] * ink[3] + 127) / 255);
  }
  pixels.resize(count * 3);
}

}  // namespace

struct JpegDecoder::State {
  jpeg_decompress_struct info{};
  ErrorManager errors;
  const unsigned char* bytes;
  std::size_t size;
  bool cmyk = false;
};

bool looks_like_jpeg(const unsigned char* bytes, std::size_t size) {
  return size >= 1 && bytes[0] == 0xFF;
}

JpegDecoder::JpegDecoder(const unsigned char* bytes, std::size_t size) : state_(new State) {
  state_->bytes = bytes;
  state_->size = size;
  state_->info.err = jpeg_std_error(&state_->errors);
  state_->errors.error_exit = fail;
  state_->errors.emit_message = on_message;
  state_->errors.output_message = print_nothing;
}

JpegDecoder::~JpegDecoder() { jpeg_destroy_decompress(&state_->info); }  // safe when never created

std::string JpegDecoder::read_header(int& width, int& height) {
  State& s = *state_;
  if (setjmp(s.errors.jump)) return s.errors.message;
  // Created here, not in the constructor, so an allocation failure in it lands on this setjmp.
  jpeg_create_decompress(&s.info);
  jpeg_mem_src(&s.info, s.bytes, static_cast<unsigned long>(s.size));
  jpeg_read_header(&s.info, TRUE);
  width = static_cast<int>(s.info.image_width);
  height = static_cast<int>(s.info.image_height);
  s.cmyk = s.info.jpeg_color_space == JCS_CMYK || s.info.jpeg_color_space == JCS_YCCK;
  // libjpeg turns YCCK into CMYK, but converts neither to RGB.
  s.info.out_color_space = s.cmyk ? JCS_CMYK : JCS_RGB;
  return {};
}

std::string JpegDecoder::decode(std::vector<std::uint8_t>& rgb) {
  State& s = *state_;
  if (setjmp(s.errors.jump)) return s.errors.message;
  jpeg_start_decompress(&s.info);
  const std::size_t stride = std::size_t{s.info.output_width} * s.info.output_components;
  rgb.resize(stride * s.info.output_height);
  // Several rows per call: with 2x2 chroma subsampling libjpeg produces two rows at a time and
  // copies through a spare row when given one.
  JSAMPROW rows[16];
  while (s.info.output_scanline < s.info.output_height) {
    const JDIMENSION count = std::min<JDIMENSION>(16, s.info.output_height - s.info.output_scanline);
    for (JDIMENSION r = 0; r < count; ++r) rows[r] = rgb.data() + (s.info.output_scanline + r) * stride;
    jpeg_read_scanlines(&s.info, rows, count);
  }
  jpeg_finish_decompress(&s.info);  // reads on to the end marker: a cut file fails here at the latest
  if (s.cmyk) cmyk_to_rgb(rgb, s.info.saw_Adobe_marker);
  return {};
}

}  // namespace tunecnn
