#pragma once
// Resize-then-crop of an 8-bit RGB image straight into a normalised float CHW example, computing
// only the pixels of the crop window. Enlarging is bilinear with pixel centres aligned (PyTorch's
// align_corners=False); shrinking averages the source area each resized pixel covers (OpenCV's
// INTER_AREA), so a photograph shrunk many times does not alias as plain bilinear would.
#include <cstdint>

namespace tunecnn {

struct ResizedSize {
  int width = 0, height = 0;
};

// The shorter side becomes `resize_side`, the longer one keeps the aspect ratio (rounded, and
// never below resize_side).
ResizedSize resized_size(int width, int height, int resize_side);

// A side x side window of the resized image at (x, y), mirrored left to right when `flip`.
struct CropWindow {
  int x = 0, y = 0, side = 0;
  bool flip = false;
};

// Per channel, out = pixel * scale[c] + shift[c], pixel in 0..255.
struct ChannelAffine {
  float scale[3] = {1, 1, 1};
  float shift[3] = {0, 0, 0};
};

// `rgb` is width x height pixels, 3 interleaved bytes each. Writes 3 x side x side floats to
// `out` (CHW). The window must lie inside `resized`.
void resize_crop(const std::uint8_t* rgb, int width, int height, ResizedSize resized,
                 const CropWindow& crop, const ChannelAffine& normalise, float* out);

}  // namespace tunecnn
