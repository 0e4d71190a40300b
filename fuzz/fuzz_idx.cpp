// idx files, plain or gzip (datasets/idx.h, gzip_reader.h), and load_mnist, which reads an
// images and a labels file and checks them together. The input is the images file followed by
// the labels file, cut at the labels' magic (00 00 08 01) where one follows the first 4 bytes;
// without it, the whole input serves as both. A clear tunecnn::Error is the expected answer to a
// bad file; anything else (another exception, a crash, a sanitizer report, a leak) is a bug.
#include "core/error.h"
#include "datasets/idx.h"
#include "datasets/mnist.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunecnn;
  const std::string_view input = fuzz::as_text(data, size);
  const std::size_t cut = input.find(std::string_view("\0\0\x08\x01", 4), 4);
  const std::string_view images_bytes = cut == std::string_view::npos ? input : input.substr(0, cut);
  const std::string_view labels_bytes = cut == std::string_view::npos ? input : input.substr(cut);
  const auto images = fuzz::write_temp("train-images-idx3-ubyte", images_bytes);
  const auto labels = fuzz::write_temp("train-labels-idx1-ubyte", labels_bytes);
  try {
    read_idx(labels, {1, "labels", "labels"});
  } catch (const Error&) {
  }
  try {
    read_idx(images, {3, "images", "pixels"});
    const auto dataset = load_mnist(fuzz::temp_dir(), MnistSplit::train, "MNIST");
    float example[28 * 28];
    if (dataset->size() > 0 && dataset->example_shape()[1] * dataset->example_shape()[2] <= 28 * 28)
      dataset->get(dataset->size() - 1, example);
  } catch (const Error&) {
  }
  return 0;
}
