// One JPEG or PNG decoded (JPEG by libjpeg-turbo, PNG by stb_image, with the decoded-size cap) and
// resized and cropped by datasets/image_resize.h, through ImageFolderDataset as training reads it.
// The input's first two bytes choose the crop side and the resize side, so the resize sees many
// geometries; the rest is the image file.
#include "core/error.h"
#include "datasets/image_folder.h"
#include "fuzz/fuzz_support.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunecnn;
  if (size < 2) return 0;
  const int side = 1 + data[0] % 64;
  const int resize_side = side + data[1] % 64;
  const auto path = fuzz::write_temp("image.jpg", fuzz::as_text(data + 2, size - 2));
  try {
    ImageFolderOptions options{.side = side, .resize_side = resize_side};
    options.warn = [](std::string_view) {};
    ImageFolderDataset dataset("fuzz", fuzz::temp_dir(), {"class"}, {{path, 0}}, options);
    std::vector<float> out(3 * static_cast<std::size_t>(side) * side);
    dataset.get(0, out.data());
    dataset.get_augmented(0, out.data(), 0x9e3779b97f4a7c15ull * size);
  } catch (const Error&) {
  }
  return 0;
}
