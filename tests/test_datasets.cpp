// The idx reader and MNIST loader against the real files and against damaged copies written
// here, the DataLoader's ordering, resume, error and shutdown guarantees on tiny datasets, its
// shards for data-parallel training (together they are the single-process batches), and the
// streaming image folder reader on imagenette-mini, on PNGs written here with known pixels (centre
// and random crops, flips, area shrinking), on folders with corrupt files, no good file, an empty
// class or no folder at all, and on flat folders read through a labels file.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <tbb/global_control.h>

#include "core/error.h"
#include "datasets/data_loader.h"
#include "datasets/idx.h"
#include "datasets/image_dataset.h"
#include "datasets/image_folder.h"
#include "datasets/mnist.h"
#include "tests/support/capture.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

constexpr std::uint32_t kImagesMagic = 0x00000803;
constexpr std::uint32_t kLabelsMagic = 0x00000801;
const fs::path kFashionDir = "/usr/share/datasets/fashion-mnist";

// ---- helpers: idx files written by the tests ----

void append_be32(Bytes& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<std::uint8_t>(value >> shift));
}

Bytes idx_bytes(std::uint32_t magic, const std::vector<std::uint32_t>& dims, const Bytes& payload) {
  Bytes out;
  append_be32(out, magic);
  for (std::uint32_t d : dims) append_be32(out, d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Bytes image_payload(int count, int rows, int cols) {
  Bytes pixels(static_cast<std::size_t>(count) * rows * cols);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>(i * 7 + i / 13);
  return pixels;
}

Bytes images_file(int count, int rows = 28, int cols = 28) {
  return idx_bytes(kImagesMagic, {std::uint32_t(count), std::uint32_t(rows), std::uint32_t(cols)},
                   image_payload(count, rows, cols));
}

Bytes labels_file(const Bytes& labels) {
  return idx_bytes(kLabelsMagic, {std::uint32_t(labels.size())}, labels);
}

Bytes labels_file(int count) {
  Bytes labels(count);
  for (int i = 0; i < count; ++i) labels[i] = static_cast<std::uint8_t>(i % 10);
  return labels_file(labels);
}

void write_plain(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

using testing::gzip_bytes;

Bytes read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using testing::expect_error;

const IdxSpec kImages{3, "images", "pixels"};
const IdxSpec kLabels{1, "labels", "labels"};

// ---- real data ----

TEST(MnistReal, SplitsHaveTheOfficialSizesAndLabels) {
  const fs::path dir = testing::shared_data_dir() / "mnist";
  auto train = load_mnist(dir, MnistSplit::train, "MNIST");
  auto test = load_mnist(dir, MnistSplit::test, "MNIST");
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->example_shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(train->num_classes(), 10);
  EXPECT_EQ(train->describe(), "MNIST train (60000 images, 1x28x28)");
  EXPECT_EQ(test->describe(), "MNIST test (10000 images, 1x28x28)");
  EXPECT_EQ(train->labels()[0], 5);
  std::vector<int> counts(10, 0);
  for (std::int32_t label : train->labels()) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++counts[label];
  }
  for (int c = 0; c < 10; ++c) EXPECT_GT(counts[c], 5000) << "class " << c;
}

TEST(MnistReal, PixelStatisticsMatchTheNormalisation) {
  const fs::path dir = testing::shared_data_dir() / "mnist";
  const IdxArray raw = read_idx(dir / "train-images-idx3-ubyte.gz", kImages);
  ASSERT_EQ(raw.dims, (std::vector<std::int64_t>{60000, 28, 28}));
  double sum = 0, sum_sq = 0;
  for (std::uint8_t p : raw.data) {
    sum += p / 255.0;
    sum_sq += (p / 255.0) * (p / 255.0);
  }
  const double n = static_cast<double>(raw.data.size());
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.1307, 0.001);
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean), 0.3081, 0.001);

  // Every example, not a stride: this export's order makes every 10th image unrepresentative.
  auto train = load_mnist(dir, MnistSplit::train, "MNIST");
  std::vector<float> example(784);
  double norm_sum = 0;
  for (std::int64_t i = 0; i < train->size(); ++i) {
    train->get(i, example.data());
    for (float v : example) norm_sum += v;
  }
  EXPECT_NEAR(norm_sum / (60000.0 * 784), 0.0, 0.005);
}

TEST(FashionMnist, LoadsWhenInstalled) {
  if (!fs::exists(kFashionDir))
    GTEST_SKIP() << "Fashion-MNIST not installed at " << kFashionDir
                 << " (Debian package dataset-fashion-mnist)";
  auto train = load_mnist(kFashionDir, MnistSplit::train, "Fashion-MNIST");
  auto test = load_mnist(kFashionDir, MnistSplit::test, "Fashion-MNIST");
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->describe(), "Fashion-MNIST train (60000 images, 1x28x28)");
  std::vector<int> counts(10, 0);
  for (std::int32_t label : train->labels()) ++counts[label];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(counts[c], 6000) << "class " << c;
  std::vector<float> example(784);
  double sum = 0;
  for (std::int64_t i = 0; i < train->size(); ++i) {
    train->get(i, example.data());
    for (float v : example) sum += v;
  }
  EXPECT_NEAR(sum / (60000.0 * 784), 0.0, 0.005);
}

TEST(MnistLoad, UnknownNameIsAnError) {
  expect_error([] { load_mnist(testing::shared_data_dir() / "mnist", MnistSplit::test, "EMNIST"); },
               {"EMNIST", "MNIST or Fashion-MNIST"});
}

// ---- the reader on files written here ----

TEST(IdxRead, PlainAndGzipGiveTheSameArrayWhateverTheName) {
  testing::TempDir tmp;
  const Bytes file = images_file(3, 4, 5);
  write_plain(tmp.path() / "plain.gz", file);  // misleading names on purpose
  write_plain(tmp.path() / "packed", gzip_bytes(file));
  const IdxArray plain = read_idx(tmp.path() / "plain.gz", kImages);
  const IdxArray packed = read_idx(tmp.path() / "packed", kImages);
  EXPECT_EQ(plain.dims, (std::vector<std::int64_t>{3, 4, 5}));
  EXPECT_EQ(plain.data, image_payload(3, 4, 5));
  EXPECT_EQ(packed.dims, plain.dims);
  EXPECT_EQ(packed.data, plain.data);

  // gzip allows members back to back (`cat a.gz b.gz`); the outputs concatenate.
  const std::size_t half = file.size() / 2;
  Bytes members = gzip_bytes(Bytes(file.begin(), file.begin() + half));
  const Bytes second = gzip_bytes(Bytes(file.begin() + half, file.end()));
  members.insert(members.end(), second.begin(), second.end());
  write_plain(tmp.path() / "members", members);
  EXPECT_EQ(read_idx(tmp.path() / "members", kImages).data, plain.data);
}

TEST(IdxRead, PrefersWhicheverFileExists) {
  testing::TempDir tmp;
  write_plain(tmp.path() / "t10k-images-idx3-ubyte", images_file(4));
  write_plain(tmp.path() / "t10k-labels-idx1-ubyte.gz", gzip_bytes(labels_file(4)));
  auto test = load_mnist(tmp.path(), MnistSplit::test, "Fashion-MNIST");
  EXPECT_EQ(test->size(), 4);
  EXPECT_EQ(test->describe(), "Fashion-MNIST test (4 images, 1x28x28)");
  std::vector<float> example(784);
  test->get(0, example.data());
  EXPECT_NEAR(example[0], (0 / 255.0 - 0.2860) / 0.3530, 1e-5);  // Fashion-MNIST statistics
}

TEST(IdxCorrupt, MissingFile) {
  testing::TempDir tmp;
  expect_error([&] { read_idx(tmp.path() / "nothing-here", kImages); },
               {"nothing-here", "not found"});
  write_plain(tmp.path() / "train-labels-idx1-ubyte", labels_file(4));
  expect_error([&] { load_mnist(tmp.path(), MnistSplit::train, "MNIST"); },
               {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz", "not found"});
}

TEST(IdxCorrupt, WrongMagic) {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "train-images-idx3-ubyte";
  write_plain(path, labels_file(4));  // a labels file where the images should be
  expect_error([&] { read_idx(path, kImages); },
               {path.string(), "magic", "0x00000801", "expected 0x00000803 for images"});
  Bytes junk = images_file(2);
  junk[0] = 0x50;  // e.g. a PNG or HTML error page saved under the idx name
  write_plain(path, junk);
  expect_error([&] { read_idx(path, kImages); }, {path.string(), "magic"});
}

TEST(IdxCorrupt, UnsupportedElementType) {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "floats-idx3";
  write_plain(path, idx_bytes(0x00000D03, {1, 1, 1}, Bytes(4, 0)));
  expect_error([&] { read_idx(path, kImages); },
               {path.string(), "unsupported element type", "float32"});
}

TEST(IdxCorrupt, TruncatedImagesPlain) {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "train-images-idx3-ubyte";
  Bytes file = images_file(3);
  file.resize(file.size() - 100);
  write_plain(path, file);
  expect_error([&] { read_idx(path, kImages); },
               {path.string(), "truncated", "expected 2352 bytes of pixels", "found 2252"});
  write_plain(path, Bytes{0, 0, 8, 3, 0, 0});
  expect_error([&] { read_idx(path, kImages); }, {path.string(), "truncated header"});
}

TEST(IdxCorrupt, TruncatedImagesGzip) {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "train-images-idx3-ubyte.gz";
  Bytes file = images_file(3);
  file.resize(file.size() - 100);
  write_plain(path, gzip_bytes(file));  // a well-formed gzip of a short idx file
  expect_error([&] { read_idx(path, kImages); },
               {path.string(), "truncated", "expected 2352 bytes of pixels", "found 2252"});
  Bytes packed = gzip_bytes(images_file(3));
  for (std::size_t cut : {packed.size() / 2, packed.size() - 4}) {  // mid-stream, in the trailer
    write_plain(path, Bytes(packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(cut)));
    expect_error([&] { read_idx(path, kImages); }, {path.string(), "truncated gzip"});
  }
}

TEST(IdxCorrupt, TrailingGarbage) {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "t10k-labels-idx1-ubyte";
  Bytes file = labels_file(5);
  file.insert(file.end(), {1, 2, 3});
  write_plain(path, file);
  expect_error([&] { read_idx(path, kLabels); }, {path.string(), "trailing garbage", "3 bytes"});
  write_plain(path, gzip_bytes(file));
  expect_error([&] { read_idx(path, kLabels); }, {path.string(), "trailing garbage", "3 bytes"});
  Bytes packed = gzip_bytes(labels_file(5));
  packed.insert(packed.end(), {'j', 'u', 'n', 'k'});  // after the compressed stream
  write_plain(path, packed);
  expect_error([&] { read_idx(path, kLabels); }, {path.string(), "corrupt gzip"});
}

// The process's address space now, from /proc/self/statm (pages).
[[maybe_unused]] std::size_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// In a death test's child: reads `path` with the address space capped 256 MiB above what the
// process uses. 0: the expected truncated-file Error; 2: anything else thrown (std::bad_alloc).
[[maybe_unused]] int read_idx_under_address_limit(const fs::path& path) {
  const rlim_t bytes = address_space_bytes() + (rlim_t{256} << 20);
  const rlimit limit{bytes, bytes};
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 4;
  try {
    read_idx(path, kImages);
  } catch (const Error& e) {
    return std::string(e.what()).find("truncated file") != std::string::npos ? 0 : 1;
  } catch (...) {
    return 2;
  }
  return 3;
}

// Found by fuzz/fuzz_idx (fuzz/regressions/idx/): the reader reserved what the header claimed,
// up to 1 GiB, before reading any data, so a 28-byte file took 1 GiB. Under an address-space
// limit 256 MiB above what the process uses, it must fail as a truncated file, not bad_alloc.
TEST(IdxCorrupt, AHeaderClaimingAGigabyteReservesNoMemoryForIt) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an address-space limit and AddressSanitizer's shadow memory do not mix";
#else
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "huge-idx3-ubyte";
  write_plain(path, idx_bytes(kImagesMagic, {1u << 20, 32, 32}, Bytes(16, 0)));  // 1 GiB claimed
  EXPECT_EXIT(std::_Exit(read_idx_under_address_limit(path)), ::testing::ExitedWithCode(0), "");
#endif
}

TEST(IdxCorrupt, ImageLabelCountMismatch) {
  testing::TempDir tmp;
  write_plain(tmp.path() / "train-images-idx3-ubyte.gz", gzip_bytes(images_file(5)));
  write_plain(tmp.path() / "train-labels-idx1-ubyte", labels_file(4));
  expect_error([&] { load_mnist(tmp.path(), MnistSplit::train, "MNIST"); },
               {"count mismatch", "train-images-idx3-ubyte.gz", "5 images",
                "train-labels-idx1-ubyte", "4 labels"});
}

TEST(IdxCorrupt, LabelOutOfRange) {
  testing::TempDir tmp;
  write_plain(tmp.path() / "t10k-images-idx3-ubyte", images_file(4));
  write_plain(tmp.path() / "t10k-labels-idx1-ubyte", labels_file(Bytes{3, 9, 10, 0}));
  expect_error([&] { load_mnist(tmp.path(), MnistSplit::test, "MNIST"); },
               {"t10k-labels-idx1-ubyte", "out of range", "index 2", "value 10"});
}

TEST(IdxCorrupt, GarbageAfterGzipHeader) {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "train-images-idx3-ubyte.gz";
  const Bytes packed = gzip_bytes(images_file(2));
  Bytes file(packed.begin(), packed.begin() + 10);  // the fixed-size gzip header only
  for (int i = 0; i < 200; ++i) file.push_back(static_cast<std::uint8_t>(0xFF - i * 37));
  write_plain(path, file);
  expect_error([&] { read_idx(path, kImages); }, {path.string(), "corrupt gzip", "zlib"});
}

TEST(IdxCorrupt, FlippedBytesInDeflateStream) {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "train-images-idx3-ubyte.gz";
  const Bytes packed = gzip_bytes(images_file(20));
  // Several places, since a flip can surface as a bad code, a bad CRC or an early end.
  for (std::size_t at :
       {std::size_t{12}, packed.size() / 3, packed.size() / 2, packed.size() - 12}) {
    Bytes damaged = packed;
    damaged[at] ^= 0x5A;
    damaged[at + 1] ^= 0xA5;
    write_plain(path, damaged);
    SCOPED_TRACE("flipped at byte " + std::to_string(at));
    expect_error([&] { read_idx(path, kImages); }, {path.string(), "gzip"});
  }
}

TEST(IdxCorrupt, DamagedCopyOfTheRealTestLabels) {
  testing::TempDir tmp;
  const Bytes real = read_all(testing::shared_data_dir() / "mnist" / "t10k-labels-idx1-ubyte.gz");
  ASSERT_GT(real.size(), 1000u);
  Bytes damaged = real;
  damaged[real.size() / 2] ^= 0xFF;
  write_plain(tmp.path() / "t10k-labels-idx1-ubyte.gz", damaged);
  write_plain(tmp.path() / "t10k-images-idx3-ubyte", images_file(10000, 1, 1));
  expect_error([&] { load_mnist(tmp.path(), MnistSplit::test, "MNIST"); },
               {"t10k-labels-idx1-ubyte.gz", "gzip"});
  write_plain(tmp.path() / "t10k-labels-idx1-ubyte.gz", real);
  EXPECT_EQ(load_mnist(tmp.path(), MnistSplit::test, "MNIST")->size(), 10000);
}

// ---- DataLoader ----

// Example i has every pixel equal to i and label i, so a batch shows which examples it holds.
std::shared_ptr<ImageDataset> tiny_dataset(int count) {
  Bytes pixels;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < count; ++i) {
    pixels.insert(pixels.end(), 4, static_cast<std::uint8_t>(i));
    labels.push_back(i);
  }
  return std::make_shared<ImageDataset>("tiny", Shape{1, 2, 2}, count, pixels, labels);
}

std::vector<Batch> drain(DataLoader& loader) {
  std::vector<Batch> batches;
  Batch batch;
  while (loader.next(batch)) batches.push_back(batch);
  return batches;
}

std::vector<std::int32_t> epoch_labels(DataLoader& loader, int epoch, std::int64_t first = 0) {
  loader.start_epoch(epoch, first);
  std::vector<std::int32_t> labels;
  for (const Batch& b : drain(loader))
    labels.insert(labels.end(), b.labels.begin(), b.labels.end());
  return labels;
}

TEST(DataLoader, SameSeedSameOrderOtherEpochOtherOrder) {
  auto data = tiny_dataset(50);
  DataLoader a(data, {.batch_size = 8, .shuffle = true, .seed = 42});
  DataLoader b(data, {.batch_size = 8, .shuffle = true, .seed = 42});
  DataLoader c(data, {.batch_size = 8, .shuffle = true, .seed = 43});
  const auto a0 = epoch_labels(a, 0);
  EXPECT_EQ(a0, epoch_labels(b, 0));
  EXPECT_NE(a0, epoch_labels(a, 1));
  EXPECT_NE(a0, epoch_labels(c, 0));
  EXPECT_EQ(a0, epoch_labels(a, 0));  // replaying an epoch does not depend on what came before
  std::vector<std::int32_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(a0, identity);
  DataLoader plain(data, {.batch_size = 8, .shuffle = false});
  EXPECT_EQ(epoch_labels(plain, 3), identity);
}

TEST(DataLoader, EveryExampleExactlyOncePerEpoch) {
  auto data = tiny_dataset(37);
  DataLoader loader(data, {.batch_size = 5, .seed = 7});
  for (int epoch = 0; epoch < 4; ++epoch) {
    const auto labels = epoch_labels(loader, epoch);
    ASSERT_EQ(labels.size(), 37u);
    EXPECT_EQ(std::set<std::int32_t>(labels.begin(), labels.end()).size(), 37u);
  }
}

TEST(DataLoader, BatchesHoldTheExamplesPixelsAndPositions) {
  auto data = tiny_dataset(10);
  DataLoader loader(data, {.batch_size = 4, .seed = 1});
  loader.start_epoch(0);
  const auto order = loader.epoch_order(0);
  std::int64_t position = 0;
  for (const Batch& batch : drain(loader)) {
    EXPECT_EQ(batch.first_index, position);
    ASSERT_EQ(batch.images.dim(0), static_cast<std::int64_t>(batch.labels.size()));
    EXPECT_EQ(batch.images.shape(), (Shape{batch.images.dim(0), 1, 2, 2}));
    EXPECT_EQ(batch.images.layout(), Layout::NCHW);
    const float* pixels = batch.images.data<float>();
    for (std::size_t i = 0; i < batch.labels.size(); ++i) {
      EXPECT_EQ(batch.labels[i], order[position + i]);
      for (int p = 0; p < 4; ++p) EXPECT_FLOAT_EQ(pixels[i * 4 + p], batch.labels[i] / 255.0f);
    }
    position += static_cast<std::int64_t>(batch.labels.size());
  }
  EXPECT_EQ(position, 10);
}

TEST(DataLoader, LastPartialBatch) {
  auto data = tiny_dataset(10);
  DataLoader keep(data, {.batch_size = 4});
  DataLoader drop(data, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(keep.batches_per_epoch(), 3);
  EXPECT_EQ(drop.batches_per_epoch(), 2);
  auto sizes = [](DataLoader& loader) {
    loader.start_epoch(0);
    std::vector<std::size_t> out;
    for (const Batch& b : drain(loader)) out.push_back(b.labels.size());
    return out;
  };
  EXPECT_EQ(sizes(keep), (std::vector<std::size_t>{4, 4, 2}));
  EXPECT_EQ(sizes(drop), (std::vector<std::size_t>{4, 4}));
  DataLoader exact(tiny_dataset(8), {.batch_size = 4});
  EXPECT_EQ(exact.batches_per_epoch(), 2);
}

TEST(DataLoader, ResumeAtBatchKYieldsTheRestOfTheSameEpoch) {
  auto data = tiny_dataset(23);
  DataLoader full(data, {.batch_size = 4, .seed = 9});
  full.start_epoch(5);
  const std::vector<Batch> all = drain(full);
  ASSERT_EQ(all.size(), 6u);
  for (std::int64_t k = 0; k <= 6; ++k) {
    DataLoader resumed(data, {.batch_size = 4, .seed = 9});
    resumed.start_epoch(5, k);
    const std::vector<Batch> rest = drain(resumed);
    ASSERT_EQ(rest.size(), all.size() - k) << "k = " << k;
    for (std::size_t i = 0; i < rest.size(); ++i) {
      EXPECT_EQ(rest[i].labels, all[k + i].labels);
      EXPECT_EQ(rest[i].first_index, all[k + i].first_index);
    }
  }
  EXPECT_THROW(full.start_epoch(0, 7), Error);
  EXPECT_THROW(full.start_epoch(0, -1), Error);
}

TEST(DataLoader, RestartingAnEpochMidwayStartsClean) {
  auto data = tiny_dataset(40);
  DataLoader loader(data, {.batch_size = 4, .seed = 3, .prefetch = 3});
  const auto expected = epoch_labels(loader, 2);
  loader.start_epoch(1);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));  // leave the producer with a full queue of epoch 1
  EXPECT_EQ(epoch_labels(loader, 2), expected);
}

class FailingDataset final : public Dataset {
 public:
  explicit FailingDataset(std::int64_t bad) : bad_(bad) {}
  std::int64_t size() const override { return 12; }
  Shape example_shape() const override { return {1, 1, 1}; }
  int num_classes() const override { return 12; }
  std::string describe() const override { return "failing"; }
  std::int32_t get(std::int64_t index, float* out) const override {
    if (index == bad_) throw Error("example " + std::to_string(index) + " is unreadable");
    *out = static_cast<float>(index);
    return static_cast<std::int32_t>(index);
  }

 private:
  std::int64_t bad_;
};

TEST(DataLoader, ExceptionFromGetReachesTheConsumer) {
  DataLoader loader(std::make_shared<FailingDataset>(6), {.batch_size = 4, .shuffle = false});
  loader.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{0, 1, 2, 3}));
  expect_error([&] { loader.next(batch); }, {"example 6 is unreadable"});
  EXPECT_FALSE(loader.next(batch));
  loader.start_epoch(0, 2);  // the batches after the bad one still load
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{8, 9, 10, 11}));
}

class SlowDataset final : public Dataset {
 public:
  std::int64_t size() const override { return 1000; }
  Shape example_shape() const override { return {1, 1, 1}; }
  int num_classes() const override { return 1; }
  std::string describe() const override { return "slow"; }
  std::int32_t get(std::int64_t, float* out) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++calls_;
    *out = 0;
    return 0;
  }
  mutable std::atomic<int> calls_{0};
};

TEST(DataLoader, DestroyingMidEpochDoesNotHang) {
  auto data = std::make_shared<SlowDataset>();
  const auto start = std::chrono::steady_clock::now();
  {
    DataLoader loader(data, {.batch_size = 8, .prefetch = 2});
    loader.start_epoch(0);
    Batch batch;
    ASSERT_TRUE(loader.next(batch));
  }
  {
    DataLoader never_read(data, {.batch_size = 8});
    never_read.start_epoch(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the queue fill up
  }
  { DataLoader never_started(data, {.batch_size = 8}); }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  // The bounded queue kept the producers from running through the 1000-example epoch.
  EXPECT_LT(data->calls_.load(), 200);
}

TEST(DataLoader, MisuseIsAnError) {
  auto data = tiny_dataset(4);
  EXPECT_THROW(DataLoader(data, {.batch_size = 0}), Error);
  EXPECT_THROW(DataLoader(data, {.batch_size = 2, .prefetch = 0}), Error);
  EXPECT_THROW(DataLoader(nullptr, {}), Error);
  DataLoader loader(data, {.batch_size = 2});
  Batch batch;
  EXPECT_THROW(loader.next(batch), Error);
}

// ---- DataLoader shards (data-parallel training) ----

// Example i reads {i, -1}; under augmentation {i, low bits of the draw}, so a batch shows which
// examples it holds and which random transform each one got.
class DrawStampedDataset final : public Dataset {
 public:
  explicit DrawStampedDataset(std::int64_t size) : size_(size) {}
  std::int64_t size() const override { return size_; }
  Shape example_shape() const override { return {1, 1, 2}; }
  int num_classes() const override { return static_cast<int>(size_); }
  std::string describe() const override { return "draw-stamped"; }
  std::int32_t get(std::int64_t index, float* out) const override {
    out[0] = static_cast<float>(index);
    out[1] = -1;
    return static_cast<std::int32_t>(index);
  }
  std::int32_t get_augmented(std::int64_t index, float* out, std::uint64_t draw) const override {
    get(index, out);
    out[1] = static_cast<float>(draw % (1u << 20));  // exact in a float
    return static_cast<std::int32_t>(index);
  }

 private:
  std::int64_t size_;
};

TEST(DataLoaderShards, SliceSplitsABatchContiguouslyAndEvenly) {
  for (std::int64_t count = 0; count <= 9; ++count)
    for (int ranks = 1; ranks <= 4; ++ranks) {
      std::int64_t next = 0;
      for (int rank = 0; rank < ranks; ++rank) {
        const auto [begin, end] = shard_slice(count, rank, ranks);
        EXPECT_EQ(begin, next) << count << " over " << ranks << ", rank " << rank;
        EXPECT_GE(end - begin, count / ranks);
        EXPECT_LE(end - begin, count / ranks + 1);
        next = end;
      }
      EXPECT_EQ(next, count) << count << " over " << ranks;
    }
  // The documented slice [r*B/P, (r+1)*B/P): the larger shares go to the higher ranks.
  EXPECT_EQ(shard_slice(10, 1, 3), (std::pair<std::int64_t, std::int64_t>{3, 6}));
  EXPECT_EQ(shard_slice(1, 0, 2), (std::pair<std::int64_t, std::int64_t>{0, 0}));
}

// With shuffling and augmentation on, the ranks' shards of each batch, concatenated in rank order,
// are the single-process batch: the same examples, the same crops, the same global size.
TEST(DataLoaderShards, RanksTogetherServeTheSingleProcessBatches) {
  bool saw_empty_shard = false;
  for (std::int64_t size : {9, 10, 11}) {  // last batches of 1, 2 and 3 examples
    auto data = std::make_shared<DrawStampedDataset>(size);
    const DataLoaderOptions options{.batch_size = 4, .shuffle = true, .seed = 5, .augment = true};
    DataLoader single(data, options);
    single.start_epoch(1);
    const std::vector<Batch> whole = drain(single);
    for (const Batch& b : whole) {
      EXPECT_EQ(b.global_size, static_cast<std::int64_t>(b.labels.size()));
      for (std::size_t i = 0; i < b.labels.size(); ++i)
        EXPECT_NE(b.images.data<float>()[2 * i + 1], -1.0f) << "augmentation is off";
    }
    for (int ranks = 1; ranks <= 3; ++ranks) {
      SCOPED_TRACE(std::to_string(size) + " examples over " + std::to_string(ranks) + " ranks");
      std::vector<std::vector<Batch>> shards;
      for (int rank = 0; rank < ranks; ++rank) {
        DataLoaderOptions sharded = options;
        sharded.shard_rank = rank;
        sharded.shard_count = ranks;
        DataLoader loader(data, sharded);
        loader.start_epoch(1);
        shards.push_back(drain(loader));
        // Every rank takes part in every step, with an empty shard if need be.
        ASSERT_EQ(shards.back().size(), whole.size()) << "rank " << rank;
      }
      for (std::size_t b = 0; b < whole.size(); ++b) {
        std::vector<std::int32_t> labels;
        std::vector<double> pixels;
        for (int rank = 0; rank < ranks; ++rank) {
          const Batch& part = shards[rank][b];
          EXPECT_EQ(part.global_size, static_cast<std::int64_t>(whole[b].labels.size()));
          EXPECT_EQ(part.first_index,
                    whole[b].first_index + static_cast<std::int64_t>(labels.size()));
          EXPECT_EQ(part.images.shape(),
                    (Shape{static_cast<std::int64_t>(part.labels.size()), 1, 1, 2}));
          saw_empty_shard |= part.labels.empty();
          labels.insert(labels.end(), part.labels.begin(), part.labels.end());
          const std::vector<double> v = testing::values(part.images);
          pixels.insert(pixels.end(), v.begin(), v.end());
        }
        EXPECT_EQ(labels, whole[b].labels) << "batch " << b;
        EXPECT_EQ(pixels, testing::values(whole[b].images)) << "batch " << b;
      }
    }
  }
  EXPECT_TRUE(saw_empty_shard);
}

TEST(DataLoaderShards, ShardThatDoesNotExistIsAnError) {
  auto data = tiny_dataset(4);
  expect_error([&] { DataLoader(data, {.shard_rank = 2, .shard_count = 2}); },
               {"tiny", "shard 2 of 2", "does not exist"});
  expect_error([&] { DataLoader(data, {.shard_rank = -1, .shard_count = 2}); }, {"shard -1 of 2"});
  expect_error([&] { DataLoader(data, {.shard_rank = 0, .shard_count = 0}); }, {"shard 0 of 0"});
}

// ---- image folders ----

const fs::path kImagenette = testing::shared_data_dir() / "imagenette-mini";
const fs::path kGoodJpeg = kImagenette / "train" / "n01440764" / "ILSVRC2012_val_00000293.JPEG";
const std::vector<std::string> kImagenetteClasses = {
    "n01440764", "n02102040", "n02979186", "n03000684", "n03028079",
    "n03394916", "n03417042", "n03425413", "n03445777", "n03888257"};
const float kImagenetMean[] = {0.485f, 0.456f, 0.406f};
const float kImagenetStd[] = {0.229f, 0.224f, 0.225f};

// Example values back as 0..255 (CHW), undoing the ImageNet normalisation.
std::vector<double> unnormalised(const std::vector<float>& values) {
  const std::size_t plane = values.size() / 3;
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::size_t c = i / plane;
    out[i] = (values[i] * kImagenetStd[c] + kImagenetMean[c]) * 255.0;
  }
  return out;
}

std::vector<double> pixels_of(const Dataset& data, std::int64_t index, std::int32_t* label = nullptr) {
  std::vector<float> values(shape_numel(data.example_shape()));
  const std::int32_t got = data.get(index, values.data());
  if (label) *label = got;
  return unnormalised(values);
}

std::vector<double> augmented_pixels_of(const Dataset& data, std::int64_t index, std::uint64_t draw) {
  std::vector<float> values(shape_numel(data.example_shape()));
  data.get_augmented(index, values.data(), draw);
  return unnormalised(values);
}

// A PNG of 8-bit pixels, rows of `channels` interleaved values (1 gray, 3 RGB, 4 RGBA).
Bytes png_bytes(int width, int height, int channels, const Bytes& pixels) {
  const auto chunk = [](Bytes& out, const char* type, const Bytes& data) {
    append_be32(out, static_cast<std::uint32_t>(data.size()));
    Bytes body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    out.insert(out.end(), body.begin(), body.end());
    append_be32(out, static_cast<std::uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
  };
  Bytes header;
  append_be32(header, static_cast<std::uint32_t>(width));
  append_be32(header, static_cast<std::uint32_t>(height));
  const std::uint8_t colour_type = channels == 1 ? 0 : channels == 3 ? 2 : 6;
  header.insert(header.end(), {8, colour_type, 0, 0, 0});
  Bytes rows;  // each row prefixed with filter type 0 (none)
  const std::size_t stride = static_cast<std::size_t>(width) * channels;
  for (int y = 0; y < height; ++y) {
    rows.push_back(0);
    rows.insert(rows.end(), pixels.begin() + y * stride, pixels.begin() + (y + 1) * stride);
  }
  uLongf size = compressBound(rows.size());
  Bytes compressed(size);
  EXPECT_EQ(compress(compressed.data(), &size, rows.data(), rows.size()), Z_OK);
  compressed.resize(size);
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  chunk(out, "IHDR", header);
  chunk(out, "IDAT", compressed);
  chunk(out, "IEND", {});
  return out;
}

Bytes solid(int width, int height, const Bytes& colour) {
  Bytes pixels;
  for (int i = 0; i < width * height; ++i) pixels.insert(pixels.end(), colour.begin(), colour.end());
  return pixels;
}

// RGB pixels from fn(x, y) -> {r, g, b}.
template <class Fn>
Bytes painted(int width, int height, Fn&& fn) {
  Bytes pixels;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const Bytes colour = fn(x, y);
      pixels.insert(pixels.end(), colour.begin(), colour.end());
    }
  return pixels;
}

struct Warnings {
  std::vector<std::string> messages;
  std::function<void(std::string_view)> sink() {
    return [this](std::string_view m) { messages.emplace_back(m); };
  }
  ImageFolderOptions options(int side) { return {.side = side, .warn = sink()}; }
  int mentioning(const std::string& text) const {
    return static_cast<int>(std::count_if(messages.begin(), messages.end(), [&](const std::string& m) {
      return m.find(text) != std::string::npos;
    }));
  }
};

// The first `count` class folders of imagenette-mini's `split`, copied to root/split.
void copy_classes(const fs::path& root, const std::string& split, int count) {
  fs::create_directories(root / split);
  for (int c = 0; c < count; ++c)
    fs::copy(kImagenette / split / kImagenetteClasses[c], root / split / kImagenetteClasses[c],
             fs::copy_options::recursive);
}

bool all_finite(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

// Sum over pixels of |R - G| + |R - B|.
double channel_differences(const std::vector<double>& pixels) {
  const std::size_t plane = pixels.size() / 3;
  double sum = 0;
  for (std::size_t j = 0; j < plane; ++j)
    sum += std::abs(pixels[j] - pixels[plane + j]) + std::abs(pixels[j] - pixels[2 * plane + j]);
  return sum;
}

TEST(ImageFolderReal, ImagenetteMiniListsItsFilesAndClasses) {
  Warnings warnings;
  auto train = load_image_folder(kImagenette, "train", warnings.options(128));
  auto val = load_image_folder(kImagenette, "val",
                               {.side = 128, .classes = train->classes(), .warn = warnings.sink()});
  EXPECT_TRUE(warnings.messages.empty()) << warnings.messages.front();
  EXPECT_EQ(train->size(), 160);
  EXPECT_EQ(val->size(), 40);
  EXPECT_EQ(train->classes(), kImagenetteClasses);
  EXPECT_EQ(val->classes(), train->classes());
  EXPECT_EQ(train->num_classes(), 10);
  EXPECT_EQ(train->example_shape(), (Shape{3, 128, 128}));
  EXPECT_EQ(train->resize_side(), 146);  // round(128 * 256 / 224)
  EXPECT_EQ(train->describe(),
            "imagenette-mini train, 160 images, 10 classes, crops 3x128x128 from shorter side 146, "
            "0 skipped");
  EXPECT_EQ(val->describe(),
            "imagenette-mini val, 40 images, 10 classes, crops 3x128x128 from shorter side 146, "
            "0 skipped");
  // Files come class by class in name order: 16 of each in train, 4 in val.
  EXPECT_EQ(train->files().front().path, kGoodJpeg);
  for (std::int64_t i = 0; i < train->size(); ++i) {
    EXPECT_EQ(train->files()[i].label, i / 16) << i;
    EXPECT_EQ(train->files()[i].path.parent_path().filename(), kImagenetteClasses[i / 16]) << i;
  }
  for (std::int64_t i = 0; i < val->size(); ++i) EXPECT_EQ(val->files()[i].label, i / 4) << i;
  EXPECT_EQ(train->skipped_files(), 0);
}

TEST(ImageFolderReal, EveryExampleIsFiniteAndTheGrayscaleOnesComeOutGray) {
  const std::set<std::string> gray = {"train/n02979186/ILSVRC2012_val_00006787.JPEG",
                                      "train/n03445777/ILSVRC2012_val_00007755.JPEG",
                                      "train/n03445777/ILSVRC2012_val_00012634.JPEG",
                                      "val/n03028079/ILSVRC2012_val_00003351.JPEG",
                                      "val/n03028079/ILSVRC2012_val_00007400.JPEG",
                                      "val/n03394916/ILSVRC2012_val_00003620.JPEG"};
  int gray_seen = 0;
  double sum[3] = {0, 0, 0};
  for (const std::string split : {"train", "val"}) {
    auto data = load_image_folder(kImagenette, split, {.side = 64, .warn = {}});
    for (std::int64_t i = 0; i < data->size(); ++i) {
      std::int32_t label = -1;
      const std::vector<double> pixels = pixels_of(*data, i, &label);
      ASSERT_TRUE(all_finite(pixels)) << data->files()[i].path;
      ASSERT_TRUE(all_finite(augmented_pixels_of(*data, i, 0x1234567890ull * (i + 1))))
          << data->files()[i].path;
      EXPECT_EQ(label, data->files()[i].label);
      const std::string name = fs::relative(data->files()[i].path, kImagenette).generic_string();
      const double per_pixel = channel_differences(pixels) / (64 * 64);
      if (gray.contains(name)) {
        ++gray_seen;
        EXPECT_LT(per_pixel, 1e-3) << name << ": R, G and B differ";
      } else {
        EXPECT_GT(per_pixel, 1.0) << name << ": a colour photograph came out gray";
      }
      const std::size_t plane = pixels.size() / 3;
      for (std::size_t j = 0; j < pixels.size(); ++j) sum[j / plane] += pixels[j] / 255.0;
    }
    EXPECT_EQ(data->skipped_files(), 0);
  }
  EXPECT_EQ(gray_seen, 6);
  // Natural photographs: each channel's mean lands near ImageNet's.
  for (int c = 0; c < 3; ++c)
    EXPECT_NEAR(sum[c] / (200 * 64.0 * 64.0), kImagenetMean[c], 0.1) << "channel " << c;
}

TEST(ImageFolderReal, ConcurrentAccessGivesTheSerialResults) {
  auto data = load_image_folder(kImagenette, "val", {.side = 48, .warn = {}});
  const std::int64_t n = data->size();
  std::vector<std::vector<double>> serial, plain(n), augmented(n);
  for (std::int64_t i = 0; i < n; ++i) serial.push_back(pixels_of(*data, i));
  // Plain threads rather than TBB tasks, so that the ThreadSanitizer build, whose TBB runs one
  // thread (tools/tsan-tests), still decodes on two threads at once here.
  auto decode_every_other = [&](std::int64_t first) {
    for (std::int64_t k = first; k < 2 * n; k += 2) {
      if (k < n) plain[k] = pixels_of(*data, k);
      else augmented[k - n] = augmented_pixels_of(*data, k - n, 99);
    }
  };
  std::thread other(decode_every_other, 1);
  decode_every_other(0);
  other.join();
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(plain[i], serial[i]) << "example " << i;
    ASSERT_EQ(augmented[i], augmented_pixels_of(*data, i, 99)) << "example " << i;
  }
}

TEST(ImageFolder, TwoThreadsMeetingOneCorruptFileWarnOnceAndBothGetTheReplacement) {
  testing::TempDir dir;
  copy_classes(dir.path(), "train", 1);
  const fs::path truncated = dir.path() / "train" / kImagenetteClasses[0] / "z_truncated.JPEG";
  Bytes bytes = read_all(kGoodJpeg);
  bytes.resize(bytes.size() / 2);
  write_plain(truncated, bytes);
  Warnings warnings;
  auto data = load_image_folder(dir.path(), "train", warnings.options(32));
  const std::int64_t bad = data->size() - 1;
  ASSERT_EQ(data->files()[bad].path, truncated);
  // Plain threads, not TBB tasks, so that the ThreadSanitizer build sees two threads here too.
  std::vector<double> first, second;
  std::thread other([&] { second = pixels_of(*data, bad); });
  first = pixels_of(*data, bad);
  other.join();
  EXPECT_EQ(first, pixels_of(*data, 0)) << "wraps to the first file";
  EXPECT_EQ(second, first);
  EXPECT_EQ(data->skipped_files(), 1);
  EXPECT_EQ(warnings.mentioning(truncated.string()), 1);
}

TEST(ImageFolder, GrayRgbAndRgbaPngsOfAnyShapeGiveTheirColour) {
  testing::TempDir dir;
  const fs::path cls = dir.path() / "train" / "a";
  fs::create_directories(cls);
  write_plain(cls / "1_gray.png", png_bytes(50, 70, 1, solid(50, 70, {77})));
  write_plain(cls / "2_rgb.PNG", png_bytes(100, 60, 3, solid(100, 60, {10, 200, 30})));
  write_plain(cls / "3_rgba.png", png_bytes(33, 33, 4, solid(33, 33, {250, 0, 128, 0})));
  write_plain(cls / "4_notes.txt", {'h', 'i'});  // not an image: ignored without a warning
  write_plain(cls / "._5_litter.png", {'x'});     // hidden: ignored without a warning
  Warnings warnings;
  auto data = load_image_folder(dir.path(), "train", warnings.options(32));
  ASSERT_EQ(data->size(), 3);
  const double expected[3][3] = {{77, 77, 77}, {10, 200, 30}, {250, 0, 128}};
  for (int i = 0; i < 3; ++i) {
    for (const std::vector<double>& pixels : {pixels_of(*data, i), augmented_pixels_of(*data, i, 7)})
      for (std::size_t j = 0; j < pixels.size(); ++j)
        ASSERT_NEAR(pixels[j], expected[i][j / (32 * 32)], 1e-3) << "image " << i << " value " << j;
  }
  EXPECT_TRUE(warnings.messages.empty()) << warnings.messages.front();
}

// A 296x148 image, red on the left half and blue on the right: the shorter side is resized to
// round(32 * 256 / 224) = 37, a quarter, the longer to 74, and the centre 32 columns (21..52)
// straddle the edge at 37 evenly, 16 red and 16 blue. Shrinking averages whole 4x4 blocks, so
// no column mixes the two colours.
TEST(ImageFolder, WideImageIsResizedAndCentreCropped) {
  testing::TempDir dir;
  fs::create_directories(dir.path() / "val" / "only");
  write_plain(dir.path() / "val" / "only" / "wide.png",
              png_bytes(296, 148, 3, painted(296, 148, [](int x, int) {
                          return x < 148 ? Bytes{255, 0, 0} : Bytes{0, 0, 255};
                        })));
  auto data = load_image_folder(dir.path(), "val", {.side = 32, .warn = {}});
  const std::vector<double> out = pixels_of(*data, 0);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) {
      const double red = out[y * 32 + x], blue = out[2 * 32 * 32 + y * 32 + x];
      ASSERT_NEAR(red, x < 16 ? 255 : 0, 1e-3) << "x " << x << " y " << y;
      ASSERT_NEAR(blue, x < 16 ? 0 : 255, 1e-3) << "x " << x << " y " << y;
    }
}

// One-pixel black and white stripes shrunk 4x and 90/37 = 2.43x: every output pixel averages the
// stripes it covers (exactly half white at 4x, between 1 and 1.43 white stripes of 2.43 at
// 2.43x); sampling two neighbours, as plain bilinear does, would give black or white bands.
TEST(ImageFolder, ShrinkingAveragesTheAreaInsteadOfAliasing) {
  const auto stripes = [](int x, int) {
    const std::uint8_t v = x % 2 ? 255 : 0;
    return Bytes{v, v, v};
  };
  testing::TempDir dir;
  fs::create_directories(dir.path() / "train" / "a");
  write_plain(dir.path() / "train" / "a" / "1_quarter.png", png_bytes(148, 148, 3, painted(148, 148, stripes)));
  write_plain(dir.path() / "train" / "a" / "2_ninety.png", png_bytes(90, 90, 3, painted(90, 90, stripes)));
  auto data = load_image_folder(dir.path(), "train", {.side = 32, .resize_side = 37, .warn = {}});
  for (const double v : pixels_of(*data, 0)) ASSERT_NEAR(v, 127.5, 1e-3);
  const double scale = 90.0 / 37.0;
  for (const double v : pixels_of(*data, 1)) {
    ASSERT_GE(v, 255 * 1.0 / scale - 1e-2);
    ASSERT_LE(v, 255 * (scale - 1) / scale + 1e-2);
  }
}

// A 40x36 image whose red value says its column and green its row, at resize_side 36 (no
// resampling): any crop's corner tells where it was cut, and its pixels must be the source's.
TEST(ImageFolder, CentreCropRandomCropsAndFlipsOfAKnownImage) {
  constexpr int kWidth = 40, kHeight = 36, kSide = 32;
  testing::TempDir dir;
  fs::create_directories(dir.path() / "train" / "a");
  write_plain(dir.path() / "train" / "a" / "grid.png",
              png_bytes(kWidth, kHeight, 3, painted(kWidth, kHeight, [](int x, int y) {
                          return Bytes{static_cast<std::uint8_t>(6 * x), static_cast<std::uint8_t>(7 * y), 50};
                        })));
  auto data = load_image_folder(dir.path(), "train", {.side = kSide, .resize_side = kHeight, .warn = {}});
  EXPECT_NE(data->describe().find("crops 3x32x32 from shorter side 36"), std::string::npos) << data->describe();
  struct Crop {
    int x, y;
    bool flip;
    auto operator<=>(const Crop&) const = default;
  };
  const auto crop_of = [&](const std::vector<double>& out) {
    const bool flip = out[1] < out[0];
    const Crop crop{static_cast<int>(std::lround(out[flip ? kSide - 1 : 0] / 6)),
                    static_cast<int>(std::lround(out[kSide * kSide] / 7)), flip};
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kSide; ++x) {
        const int source_x = crop.x + (flip ? kSide - 1 - x : x), source_y = crop.y + y;
        const std::size_t at = static_cast<std::size_t>(y) * kSide + x;
        EXPECT_NEAR(out[at], 6 * source_x, 1e-3);
        EXPECT_NEAR(out[kSide * kSide + at], 7 * source_y, 1e-3);
        EXPECT_NEAR(out[2 * kSide * kSide + at], 50, 1e-3);
      }
    return crop;
  };
  EXPECT_EQ(crop_of(pixels_of(*data, 0)), (Crop{4, 2, false}));  // the centre

  std::set<Crop> seen;
  std::map<std::pair<int, int>, std::vector<double>> unflipped;
  std::uint64_t state = 5;
  for (int i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t draw = state ^ (state >> 29);
    const std::vector<double> out = augmented_pixels_of(*data, 0, draw);
    ASSERT_EQ(out, augmented_pixels_of(*data, 0, draw)) << "draw " << draw << " is not repeatable";
    const Crop crop = crop_of(out);
    if (::testing::Test::HasFailure()) return;
    seen.insert(crop);
    if (!crop.flip) unflipped[{crop.x, crop.y}] = out;
  }
  EXPECT_EQ(seen.size(), 9u * 5u * 2u) << "every position (0..8 x 0..4), flipped and not";
  // The mirror of a flipped crop is the unflipped crop at the same position.
  std::vector<double> flipped;
  for (std::uint64_t draw = 0; draw < 64 && flipped.empty(); ++draw) {
    const std::vector<double> out = augmented_pixels_of(*data, 0, draw);
    if (crop_of(out).flip) flipped = out;
  }
  ASSERT_FALSE(flipped.empty()) << "none of draws 0..63 flips";
  const Crop at = crop_of(flipped);
  const std::vector<double>& plain = unflipped.at({at.x, at.y});
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kSide; ++x) {
        const std::size_t row = static_cast<std::size_t>(c * kSide + y) * kSide;
        ASSERT_EQ(flipped[row + x], plain[row + kSide - 1 - x]) << c << " " << y << " " << x;
      }
}

// A truncated JPEG and random bytes named .JPEG among two real class folders: each is named in
// one warning, counted, and replaced by the next file that decodes (wrapping at the end).
TEST(ImageFolder, CorruptFilesAreWarnedOnceCountedAndReplaced) {
  testing::TempDir dir;
  copy_classes(dir.path(), "train", 2);
  const fs::path truncated = dir.path() / "train" / kImagenetteClasses[0] / "z_truncated.JPEG";
  const fs::path noise = dir.path() / "train" / kImagenetteClasses[1] / "z_noise.JPEG";
  Bytes bytes = read_all(kGoodJpeg);
  bytes.resize(bytes.size() / 2);
  write_plain(truncated, bytes);
  Bytes random(5000);
  std::uint64_t state = 17;
  for (auto& b : random) b = static_cast<std::uint8_t>((state = state * 6364136223846793005ull + 1) >> 56);
  write_plain(noise, random);

  Warnings warnings;
  ImageFolderOptions options = warnings.options(64);
  {
    auto data = load_image_folder(dir.path(), "train", options);
    ASSERT_EQ(data->size(), 34);
    EXPECT_TRUE(warnings.messages.empty()) << "nothing is decoded at load time";
    DataLoader loader(data, {.batch_size = 8, .seed = 4, .augment = true});
    loader.start_epoch(0);
    Batch batch;
    std::int64_t served = 0;
    while (loader.next(batch)) {
      served += batch.images.shape()[0];
      const float* v = batch.images.data<float>();
      ASSERT_TRUE(std::all_of(v, v + batch.images.numel(), [](float x) { return std::isfinite(x); }));
    }
    EXPECT_EQ(served, 34) << "every slot of every batch is filled";
    EXPECT_EQ(data->skipped_files(), 2);
    EXPECT_EQ(warnings.messages.size(), 2u) << "one warning per bad file, even from parallel decodes";
    EXPECT_EQ(warnings.mentioning(truncated.string()), 1);
    EXPECT_EQ(warnings.mentioning(noise.string()), 1);
    EXPECT_NE(data->describe().find("34 images, 2 classes, crops 3x64x64 from shorter side 73, 2 skipped"),
              std::string::npos)
        << data->describe();
  }

  warnings.messages.clear();
  auto data = load_image_folder(dir.path(), "train", options);
  ASSERT_EQ(data->files()[16].path, truncated);
  ASSERT_EQ(data->files()[33].path, noise);
  std::int32_t label = -1;
  EXPECT_EQ(pixels_of(*data, 16, &label), pixels_of(*data, 17));
  EXPECT_EQ(label, 1) << "the replacement's own label";
  EXPECT_EQ(pixels_of(*data, 33, &label), pixels_of(*data, 0)) << "wraps to the first file";
  EXPECT_EQ(label, 0);
  EXPECT_EQ(augmented_pixels_of(*data, 16, 3), augmented_pixels_of(*data, 17, 3));
  EXPECT_EQ(data->skipped_files(), 2);
  ASSERT_EQ(warnings.messages.size(), 2u);
  EXPECT_NE(warnings.messages[0].find(truncated.string()), std::string::npos) << warnings.messages[0];
  // Cut in half: libjpeg would fill the missing half with grey; it is an error instead.
  EXPECT_NE(warnings.messages[0].find("libjpeg-turbo: Premature end of JPEG file"), std::string::npos)
      << warnings.messages[0];
}

// A real JPEG whose frame header is edited to claim 20000x20000: skipped before decoding (which
// would take 1.2 GB), named in a warning with the size, and replaced like an undecodable file.
TEST(ImageFolder, AFileClaimingHugeDimensionsIsSkippedWithoutDecoding) {
  testing::TempDir dir;
  copy_classes(dir.path(), "train", 1);
  const fs::path huge = dir.path() / "train" / kImagenetteClasses[0] / "z_huge.JPEG";
  Bytes bytes = read_all(kGoodJpeg);
  std::size_t frame = 0;  // the SOF0 or SOF2 marker: FF C0/C2, length, precision, height, width
  for (std::size_t i = 0; i + 9 < bytes.size() && frame == 0; ++i)
    if (bytes[i] == 0xFF && (bytes[i + 1] == 0xC0 || bytes[i + 1] == 0xC2)) frame = i;
  ASSERT_NE(frame, 0u) << "no frame header in " << kGoodJpeg;
  for (std::size_t at : {frame + 5, frame + 7}) bytes[at] = 20000 >> 8, bytes[at + 1] = 20000 & 0xFF;
  write_plain(huge, bytes);

  Warnings warnings;
  auto data = load_image_folder(dir.path(), "train", warnings.options(32));
  ASSERT_EQ(data->files().back().path, huge);
  EXPECT_EQ(pixels_of(*data, data->size() - 1), pixels_of(*data, 0)) << "replaced by the next file (wrapping)";
  EXPECT_EQ(data->skipped_files(), 1);
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find(huge.string()), std::string::npos) << warnings.messages[0];
  EXPECT_NE(warnings.messages[0].find("claims 20000x20000 pixels, over the 64 Mpixel"), std::string::npos)
      << warnings.messages[0];
}

// kGoodJpeg with its first Huffman table's 16 code counts raised to 18 each: 288 codes, over
// the 256 a table may have. `table` is where its DHT marker is.
Bytes jpeg_with_288_code_table(std::size_t& table) {
  Bytes bytes = read_all(kGoodJpeg);
  table = 0;  // the first DHT marker: FF C4, length, class and id, 16 counts
  for (std::size_t i = 0; i + 21 < bytes.size() && table == 0; ++i)
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC4) table = i;
  EXPECT_NE(table, 0u) << "no Huffman table in " << kGoodJpeg;
  for (std::size_t k = 0; k < 16; ++k) bytes[table + 5 + k] = 18;
  return bytes;
}

// One bad file `name` with `bytes` among a real class folder's: it is skipped, replaced by the
// next file (wrapping) and named in the one warning, which must contain `why`.
void expect_skipped_with(const Bytes& bytes, const std::string& name, const std::string& why) {
  testing::TempDir dir;
  copy_classes(dir.path(), "train", 1);
  const fs::path bad = dir.path() / "train" / kImagenetteClasses[0] / name;
  write_plain(bad, bytes);
  Warnings warnings;
  auto data = load_image_folder(dir.path(), "train", warnings.options(32));
  ASSERT_EQ(data->files().back().path, bad);
  EXPECT_EQ(pixels_of(*data, data->size() - 1), pixels_of(*data, 0)) << "replaced by the next file (wrapping)";
  EXPECT_EQ(data->skipped_files(), 1);
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find(bad.string()), std::string::npos) << warnings.messages[0];
  EXPECT_NE(warnings.messages[0].find(why), std::string::npos) << warnings.messages[0];
}

// Found by fuzz/fuzz_image (fuzz/regressions/image/) when stb_image 2.27 decoded JPEGs: counts
// summing to over 256 wrote past its tables. libjpeg-turbo checks them; the file is skipped,
// named in a warning, and replaced like any undecodable file.
TEST(ImageFolder, AJpegHuffmanTableOfOver256CodesIsSkipped) {
  std::size_t table = 0;
  const Bytes bytes = jpeg_with_288_code_table(table);
  expect_skipped_with(bytes, "z_dht.JPEG", "libjpeg-turbo: Bogus Huffman table definition");
}

// Found by fuzz/fuzz_image_folder (fuzz/regressions/image_folder/): stb_image took 0xFF fill
// bytes before the start marker; libjpeg requires the file to begin with it, and says so.
TEST(ImageFolder, AJpegWithFillBytesBeforeItsStartIsSkipped) {
  std::size_t table = 0;
  Bytes bytes = jpeg_with_288_code_table(table);
  bytes.insert(bytes.begin(), 5, 0xFF);
  expect_skipped_with(bytes, "z_fill.JPEG", "libjpeg-turbo: Not a JPEG file: starts with 0xff 0xff");
}

// Found by fuzz/fuzz_image_folder (fuzz/regressions/image_folder/): a file cut inside a Huffman
// table's counts, which stb_image read on as zeros. libjpeg reports the early end.
TEST(ImageFolder, AJpegCutInsideAHuffmanTableIsSkipped) {
  std::size_t table = 0;
  Bytes bytes = jpeg_with_288_code_table(table);
  bytes.resize(table + 5 + 15);  // marker, length, class and id, 15 of the 16 counts
  expect_skipped_with(bytes, "z_cut.JPEG", "libjpeg-turbo: Premature end of JPEG file");
}

// Found by fuzz/fuzz_image (fuzz/regressions/image/): stb_image 2.27 allocated what an IDAT
// chunk's length claimed before reading it: a 174-byte PNG took 1.2 GB. Refused beforehand.
TEST(ImageFolder, APngChunkLongerThanTheFileIsSkippedBeforeDecoding) {
  Bytes bytes = png_bytes(20, 10, 3, solid(20, 10, {10, 200, 30}));
  const std::size_t idat = 8 + 12 + 13;  // after the signature and IHDR
  bytes[idat] = 0x4C, bytes[idat + 1] = 0x00, bytes[idat + 2] = 0x00, bytes[idat + 3] = 0xA3;
  expect_skipped_with(bytes, "z_long.png",
                      "'IDAT' chunk at byte 33 claims 1275068579 bytes, more than the " +
                          std::to_string(bytes.size() - idat - 8) + " left in the file");
}

// Found by fuzz/fuzz_image (fuzz/regressions/image/): stb_image 2.27 copies an empty IDAT chunk
// that precedes the image data into a null buffer (undefined behaviour: a UBSan report, so this
// test fails without the fix in the sanitized build, -DTUNECNN_SANITIZE=ON). The chunk is valid
// and empty: the file decodes as it would without it, and nothing is skipped.
TEST(ImageFolder, AnEmptyPngDataChunkBeforeTheImageDataIsHarmless) {
  testing::TempDir dir;
  const fs::path cls = dir.path() / "train" / "a";
  fs::create_directories(cls);
  const Bytes plain = png_bytes(20, 10, 3, solid(20, 10, {10, 200, 30}));
  Bytes with_empty = plain;
  Bytes empty_idat;  // length 0, "IDAT", the CRC of "IDAT"
  append_be32(empty_idat, 0);
  empty_idat.insert(empty_idat.end(), {'I', 'D', 'A', 'T'});
  append_be32(empty_idat, static_cast<std::uint32_t>(crc32(0, empty_idat.data() + 4, 4)));
  with_empty.insert(with_empty.begin() + 8 + 12 + 13, empty_idat.begin(), empty_idat.end());  // after IHDR
  write_plain(cls / "1_plain.png", plain);
  write_plain(cls / "2_empty_idat.png", with_empty);
  Warnings warnings;
  auto data = load_image_folder(dir.path(), "train", warnings.options(8));
  EXPECT_EQ(pixels_of(*data, 1), pixels_of(*data, 0));
  EXPECT_EQ(data->skipped_files(), 0);
  EXPECT_TRUE(warnings.messages.empty()) << warnings.messages[0];
}

// Found by fuzz/fuzz_image_folder (fuzz/regressions/image_folder/png-empty-idat-without-crc): a
// PNG ending in an empty IDAT chunk whose CRC is cut off made the check above erase past the end
// of the file's bytes (a negative-size memmove). Now a clean skip.
TEST(ImageFolder, APngEndingInAnEmptyDataChunkWithoutItsCrcIsSkipped) {
  Bytes bytes = png_bytes(20, 10, 3, solid(20, 10, {10, 200, 30}));
  bytes.resize(8);  // the signature only
  append_be32(bytes, 0);
  bytes.insert(bytes.end(), {'I', 'D', 'A', 'T'});
  expect_skipped_with(bytes, "z_idat_no_crc.png", "not decodable (stb_image: ");
}

TEST(ImageFolder, NoDecodableImageIsAnErrorNamingTheFolder) {
  testing::TempDir dir;
  const fs::path cls = dir.path() / "train" / "a";
  fs::create_directories(cls);
  write_plain(cls / "x.jpg", {0xff, 0xd8, 0xff, 0x00, 0x01});
  write_plain(cls / "y.png", {'n', 'o', 't', ' ', 'a', ' ', 'p', 'n', 'g'});
  Warnings warnings;
  auto data = load_image_folder(dir.path(), "train", warnings.options(32));
  std::vector<float> out(3 * 32 * 32);
  for (int round = 0; round < 2; ++round)
    for (std::int64_t i = 0; i < 2; ++i)
      expect_error([&] { data->get(i, out.data()); },
                   {(dir.path() / "train").string(), "none of its 2 images could be decoded"});
  EXPECT_EQ(warnings.messages.size(), 2u);
  EXPECT_EQ(data->skipped_files(), 2);
  expect_error([&] { data->get(2, out.data()); }, {"example 2 does not exist"});
}

TEST(ImageFolder, EmptyClassFolderIsStillAClassWithAWarning) {
  testing::TempDir dir;
  const fs::path split = dir.path() / "train";
  fs::create_directories(split / "a_empty");
  fs::create_directories(split / "b");
  fs::copy_file(kGoodJpeg, split / "b" / "good.JPEG");
  Warnings warnings;
  auto data = load_image_folder(dir.path(), "train", warnings.options(64));
  EXPECT_EQ(data->size(), 1);
  EXPECT_EQ(data->classes(), (std::vector<std::string>{"a_empty", "b"}));
  EXPECT_EQ(data->files()[0].label, 1);
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find((split / "a_empty").string()), std::string::npos) << warnings.messages[0];
}

TEST(ImageFolder, MissingOrEmptyFoldersAndBadOptionsAreErrors) {
  testing::TempDir dir;
  expect_error([&] { load_image_folder(dir.path(), "train"); },
               {(dir.path() / "train").string(), "does not exist"});
  fs::create_directories(dir.path() / "val");
  expect_error([&] { load_image_folder(dir.path(), "val"); },
               {(dir.path() / "val").string(), "no class folders", "val_labels.txt"});
  fs::create_directories(dir.path() / "val" / "a");
  expect_error([&] { load_image_folder(dir.path(), "val", {.warn = [](std::string_view) {}}); },
               {(dir.path() / "val").string(), "holds no images"});
  fs::copy_file(kGoodJpeg, dir.path() / "val" / "a" / "good.JPEG");
  fs::create_directories(dir.path() / "val" / "b");
  fs::copy_file(kGoodJpeg, dir.path() / "val" / "b" / "good.JPEG");
  expect_error([&] { load_image_folder(dir.path(), "val", {.classes = {"a", "c"}}); },
               {(dir.path() / "val").string(), "missing: c", "not in the list: b"});
  expect_error([&] { load_image_folder(dir.path(), "val", {.side = 64, .resize_side = 63}); },
               {"resize side 63 is smaller than the crop side 64"});
  expect_error([&] { load_image_folder(dir.path(), "val", {.side = 0}); }, {"side must be positive"});
  expect_error([&] { load_image_folder(dir.path(), "val", {.labels_file = dir.path() / "nope.txt"}); },
               {(dir.path() / "nope.txt").string(), "does not exist"});
}

// imagenette-mini's first three val classes copied into one flat folder, labelled by a file.
struct FlatVal {
  testing::TempDir dir;
  fs::path folder = dir.path() / "val";
  std::vector<ImageFile> expected;  // the files' class-folder originals and labels
  FlatVal() {
    fs::create_directories(folder);
    for (int c = 0; c < 3; ++c)
      for (const auto& entry : fs::directory_iterator(kImagenette / "val" / kImagenetteClasses[c])) {
        fs::copy_file(entry.path(), folder / entry.path().filename());
        expected.push_back({entry.path(), c});
      }
    std::sort(expected.begin(), expected.end(),
              [](const ImageFile& a, const ImageFile& b) { return a.path.filename() < b.path.filename(); });
  }
  void write_labels(const fs::path& path, bool by_index, const std::string& extra_lines = "") const {
    std::ofstream out(path);
    out << "# ImageNet val labels\n\n";
    for (auto it = expected.rbegin(); it != expected.rend(); ++it)  // any order
      out << it->path.filename().string() << "  "
          << (by_index ? std::to_string(it->label) : kImagenetteClasses[it->label]) << "   # note\n";
    out << extra_lines;
  }
};

TEST(ImageFolderLabels, FlatSplitLabelledByWnidOrIndexMatchesTheClassFolders) {
  FlatVal flat;
  flat.write_labels(flat.dir.path() / "val_labels.txt", false);
  flat.write_labels(flat.dir.path() / "by_index.txt", true);
  auto folders = load_image_folder(kImagenette, "val", {.side = 48, .warn = {}});
  Warnings warnings;
  auto by_wnid = load_image_folder(flat.dir.path(), "val",
                                   {.side = 48, .classes = kImagenetteClasses, .warn = warnings.sink()});
  auto by_index = load_image_folder(
      flat.dir.path(), "val",
      {.side = 48, .labels_file = flat.dir.path() / "by_index.txt", .classes = kImagenetteClasses, .warn = {}});
  EXPECT_TRUE(warnings.messages.empty()) << warnings.messages.front();
  for (const auto& data : {by_wnid, by_index}) {
    ASSERT_EQ(data->size(), 12);
    EXPECT_EQ(data->classes(), kImagenetteClasses);
    for (std::int64_t i = 0; i < 12; ++i) {
      EXPECT_EQ(data->files()[i].path, flat.folder / flat.expected[i].path.filename());
      EXPECT_EQ(data->files()[i].label, flat.expected[i].label) << i;
    }
  }
  // The same file gives the same example whichever layout it is read from.
  const auto original = std::find_if(folders->files().begin(), folders->files().end(),
                                     [&](const ImageFile& f) { return f.path == flat.expected[5].path; });
  ASSERT_NE(original, folders->files().end());
  EXPECT_EQ(pixels_of(*by_wnid, 5), pixels_of(*folders, original - folders->files().begin()));

  // An image the labels file leaves out is named in a warning and left out.
  fs::copy_file(kGoodJpeg, flat.folder / "unlisted.JPEG");
  auto partial = load_image_folder(flat.dir.path(), "val",
                                   {.side = 48, .classes = kImagenetteClasses, .warn = warnings.sink()});
  EXPECT_EQ(partial->size(), 12);
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find("unlisted.JPEG"), std::string::npos) << warnings.messages[0];
  EXPECT_NE(warnings.messages[0].find("val_labels.txt"), std::string::npos) << warnings.messages[0];
}

TEST(ImageFolderLabels, BadLabelsFilesAreErrorsNamingTheFileAndLine) {
  FlatVal flat;
  const fs::path labels = flat.dir.path() / "val_labels.txt";
  // Lines 1-2 are a comment and a blank, then the files from the last: line 3 is the last file.
  const std::string first = flat.expected.back().path.filename().string();
  const auto load = [&] {
    load_image_folder(flat.dir.path(), "val", {.side = 32, .classes = kImagenetteClasses, .warn = {}});
  };
  const struct {
    std::string extra_line;
    std::string message;
  } cases[] = {
      {"x.JPEG n99999999\n", "unknown class 'n99999999'"},
      {"x.JPEG 10\n", "class index 10 is out of range (10 classes: 0 to 9)"},
      {"missing.JPEG 3\n", (flat.folder / "missing.JPEG").string() + " does not exist"},
      {"lonely.JPEG\n", "expected 'filename label'"},
      {"x.JPEG 1 2\n", "expected 'filename label'"},
      {first + " 1\n", first + " is already labelled on line 3"},
      // Found by fuzz/fuzz_image_folder (fuzz/regressions/image_folder/name-too-long): the
      // existence check threw std::filesystem_error, which is not an Error, out of the loader.
      {std::string(300, 'd') + ".JPEG 7\n", "cannot be read (File name too long)"},
  };
  for (const auto& c : cases) {
    flat.write_labels(labels, false, c.extra_line);
    expect_error(load, {labels.string(), "line 15", c.message});  // 2 header + 12 + 1
  }
  flat.write_labels(labels, false);
  expect_error([&] { load_image_folder(flat.dir.path(), "val", {.side = 32}); },
               {labels.string(), "class list"});
  std::ofstream(labels) << "# nothing but a comment\n";
  expect_error(load, {labels.string(), "lists no images"});
}

}  // namespace
}  // namespace tunecnn
