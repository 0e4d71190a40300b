// The image-folder scan's per-file path (datasets/image_folder.h), flat layout: the input is the
// labels file, up to a line "--"; what follows it becomes the bytes of one of the split's three
// images (the other two are empty files, skipped with a warning). Every listed example is then
// read, so the decode-or-replace path runs too.
#include "core/error.h"
#include "datasets/image_folder.h"
#include "fuzz/fuzz_support.h"

#include <string>
#include <vector>

namespace {

constexpr std::string_view kSeparator = "\n--\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunecnn;
  const std::filesystem::path root = fuzz::temp_dir();
  static const bool made = [&] {
    std::filesystem::create_directories(root / "val");
    fuzz::write_temp("val/a.JPEG", "");
    fuzz::write_temp("val/b.png", "");
    return true;
  }();
  (void)made;
  const std::string_view input = fuzz::as_text(data, size);
  const std::size_t cut = input.find(kSeparator);
  fuzz::write_temp("val_labels.txt", input.substr(0, cut));
  fuzz::write_temp("val/c.jpg", cut == std::string_view::npos ? std::string_view{}
                                                               : input.substr(cut + kSeparator.size()));
  try {
    ImageFolderOptions options{.side = 8, .resize_side = 9};
    options.classes = {"n01440764", "n02102040", "7"};
    options.warn = [](std::string_view) {};
    const auto dataset = load_image_folder(root, "val", options);
    std::vector<float> out(3 * 8 * 8);
    for (std::int64_t i = 0; i < dataset->size() && i < 4; ++i) dataset->get(i, out.data());
  } catch (const Error&) {
  }
  return 0;
}
