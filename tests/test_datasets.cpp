// The idx reader and MNIST loader against the real files and against damaged copies written
// here, and the DataLoader's ordering, resume, error and shutdown guarantees on tiny datasets.
#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "datasets/data_loader.h"
#include "datasets/idx.h"
#include "datasets/image_dataset.h"
#include "datasets/mnist.h"
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

Bytes gzip_bytes(const Bytes& bytes) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  Bytes out(deflateBound(&stream, bytes.size()));
  stream.next_in = const_cast<Bytes::value_type*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

Bytes read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs fn, expects an Error whose message holds the file name and every given word.
template <class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no Error thrown; expected one mentioning " << ::testing::PrintToString(words);
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& word : words)
      EXPECT_NE(what.find(word), std::string::npos) << "'" << word << "' missing from: " << what;
  }
}

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

}  // namespace
}  // namespace tunecnn
