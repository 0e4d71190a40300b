// The CIFAR-10 archive (datasets/cifar10.h over tar_gz.h and gzip_reader.h): the input is the
// .tar.gz. A clear tunecnn::Error is the expected answer to a bad archive.
#include "core/error.h"
#include "datasets/cifar10.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tunecnn;
  const auto archive = fuzz::write_temp("cifar-10-binary.tar.gz", fuzz::as_text(data, size));
  try {
    const Cifar10Splits splits = load_cifar10(archive);
    float example[3 * 32 * 32];
    splits.train->get(0, example);
    splits.test->get(splits.test->size() - 1, example);
  } catch (const Error&) {
  }
  return 0;
}
