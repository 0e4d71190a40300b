// The CIFAR-10 reader against the real archive (and the same archive unpacked by tar(1)), against
// small batch files and damaged copies written here; the tar.gz reader on archives tar(1) makes
// in each of its formats; and RandomCropDataset's crops and flips, alone and under the DataLoader.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "datasets/cifar10.h"
#include "datasets/data_loader.h"
#include "datasets/image_dataset.h"
#include "datasets/random_crop.h"
#include "datasets/tar_gz.h"
#include "tests/support/capture.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kRecordBytes = 3073;
constexpr std::size_t kImageBytes = 3072;
const std::array<std::string, 6> kBatchFiles = {"data_batch_1.bin", "data_batch_2.bin",
                                                "data_batch_3.bin", "data_batch_4.bin",
                                                "data_batch_5.bin", "test_batch.bin"};
// The per-channel statistics the reader normalises with; NormalisedTrainingPixels... checks
// them against the data.
const float kMean[3] = {0.4914f, 0.4822f, 0.4465f};
const float kStddev[3] = {0.2470f, 0.2435f, 0.2616f};

fs::path real_archive() {
  return testing::shared_data_dir() / "cifar-10-binary.tar.gz";
}

// ---- helpers ----

void write_bytes(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out.good()) throw std::runtime_error("cannot write " + path.string());
}

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs a shell command (tar) and throws if it fails, so fixtures can use it too.
void shell(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("command failed: " + command);
}

std::string quoted(const fs::path& path) {
  return "'" + path.string() + "'";
}

// tar(1) packing `member` (relative to dir) into `out`, gzip'd, in one of its formats.
void make_tar_gz(const fs::path& dir, const std::string& member, const fs::path& out,
                 const std::string& format = "gnu") {
  shell("tar --format=" + format + " -czf " + quoted(out) + " -C " + quoted(dir) + " " + member);
}

Bytes make_tar(const fs::path& dir, const std::string& member) {
  const fs::path out = dir / "plain.tar";
  shell("tar -cf " + quoted(out) + " -C " + quoted(dir) + " " + member);
  return read_bytes(out);
}

using testing::gzip_bytes;

using testing::expect_error;

float normalised(std::uint8_t byte, int channel) {
  return (byte / 255.0f - kMean[channel]) / kStddev[channel];
}

// Counts the examples of `data` that differ from the records in `batch` starting at example
// `first`, and the first difference in `report`.
std::int64_t mismatches(const ImageDataset& data, std::int64_t first, const Bytes& batch,
                        std::string& report) {
  std::vector<float> example(kImageBytes);
  std::int64_t bad = 0;
  for (std::size_t r = 0; r < batch.size() / kRecordBytes; ++r) {
    const std::uint8_t* record = batch.data() + r * kRecordBytes;
    const std::int64_t index = first + static_cast<std::int64_t>(r);
    bool same = data.get(index, example.data()) == record[0];
    for (std::size_t i = 0; same && i < kImageBytes; ++i)
      same = std::abs(example[i] - normalised(record[1 + i], static_cast<int>(i / 1024))) < 1e-5f;
    if (!same && bad++ == 0) report = data.describe() + " example " + std::to_string(index);
  }
  return bad;
}

bool same_examples(const Dataset& a, const Dataset& b) {
  if (a.size() != b.size() || a.example_shape() != b.example_shape()) return false;
  std::vector<float> x(shape_numel(a.example_shape())), y(x.size());
  for (std::int64_t i = 0; i < a.size(); ++i)
    if (a.get(i, x.data()) != b.get(i, y.data()) || x != y) return false;
  return true;
}

// ---- the real archive, loaded once per test binary ----

// Read by load_cifar10 from the archive itself.
const Cifar10Splits& real_splits() {
  static const Cifar10Splits splits = load_cifar10(real_archive());
  return splits;
}

// The archive as tar(1) extracts it: ROOT/cifar-10-batches-bin/.
struct Unpacked {
  testing::TempDir root;
  Unpacked() { shell("tar -xzf " + quoted(real_archive()) + " -C " + quoted(root.path())); }
  fs::path batches() const { return root.path() / "cifar-10-batches-bin"; }
};

const Unpacked& real_unpacked() {
  static const Unpacked unpacked;
  return unpacked;
}

TEST(Cifar10Real, SplitsHaveTheirSizesShapeAndBalancedClasses) {
  const Cifar10Splits& splits = real_splits();
  ASSERT_TRUE(splits.train && splits.test);
  EXPECT_EQ(splits.train->size(), 50000);
  EXPECT_EQ(splits.test->size(), 10000);
  EXPECT_EQ(splits.train->example_shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(splits.test->example_shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(splits.train->num_classes(), 10);
  EXPECT_EQ(splits.train->describe(), "CIFAR-10 train, 50000 images 3x32x32, 10 classes");
  EXPECT_EQ(splits.test->describe(), "CIFAR-10 test, 10000 images 3x32x32, 10 classes");
  EXPECT_EQ(splits.class_names,
            (std::vector<std::string>{"airplane", "automobile", "bird", "cat", "deer", "dog",
                                      "frog", "horse", "ship", "truck"}));
  for (const auto& [data, per_class] :
       {std::pair{splits.train, 5000}, std::pair{splits.test, 1000}}) {
    std::vector<int> counts(10, 0);
    for (std::int32_t label : data->labels()) {
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 10);
      ++counts[label];
    }
    for (int c = 0; c < 10; ++c)
      EXPECT_EQ(counts[c], per_class) << data->describe() << " class " << c;
  }
}

TEST(Cifar10Real, ExamplesAreTheirRecordsNormalised) {
  const fs::path batches = real_unpacked().batches();
  std::int64_t first = 0;
  for (int b = 0; b < 5; ++b) {
    const Bytes batch = read_bytes(batches / kBatchFiles[b]);
    ASSERT_EQ(batch.size(), 10000 * kRecordBytes) << kBatchFiles[b];
    std::string report;
    EXPECT_EQ(mismatches(*real_splits().train, first, batch, report), 0) << report;
    first += 10000;
  }
  std::string report;
  EXPECT_EQ(mismatches(*real_splits().test, 0, read_bytes(batches / "test_batch.bin"), report), 0)
      << report;
}

TEST(Cifar10Real, NormalisedTrainingPixelsHaveZeroMeanAndUnitDeviation) {
  const ImageDataset& train = *real_splits().train;
  std::vector<float> example(kImageBytes);
  double sum[3] = {0, 0, 0}, sum_sq[3] = {0, 0, 0};
  for (std::int64_t i = 0; i < train.size(); ++i) {
    train.get(i, example.data());
    for (std::size_t j = 0; j < kImageBytes; ++j) {
      sum[j / 1024] += example[j];
      sum_sq[j / 1024] += double{example[j]} * example[j];
    }
  }
  const double n = 50000.0 * 1024;
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(sum[c] / n, 0.0, 0.001) << "channel " << c;
    EXPECT_NEAR(std::sqrt(sum_sq[c] / n - (sum[c] / n) * (sum[c] / n)), 1.0, 0.001)
        << "channel " << c;
  }
}

TEST(Cifar10Real, ExtractedFolderAndItsParentGiveTheSameExamples) {
  const Cifar10Splits& from_archive = real_splits();
  for (const fs::path& path : {real_unpacked().batches(), real_unpacked().root.path()}) {
    SCOPED_TRACE(path.string());
    const Cifar10Splits splits = load_cifar10(path);
    EXPECT_EQ(splits.train->labels(), from_archive.train->labels());
    EXPECT_TRUE(same_examples(*splits.train, *from_archive.train));
    EXPECT_TRUE(same_examples(*splits.test, *from_archive.test));
    EXPECT_EQ(splits.class_names, from_archive.class_names);
  }
}

TEST(Cifar10Real, ArchiveCutInHalfIsAnError) {
  testing::TempDir tmp;
  const Bytes archive = read_bytes(real_archive());
  const fs::path cut = tmp.path() / "cifar-10-binary.tar.gz";
  write_bytes(cut, Bytes(archive.begin(),
                         archive.begin() + static_cast<std::ptrdiff_t>(archive.size() / 2)));
  expect_error([&] { load_cifar10(tmp.path()); }, {cut.string(), "truncated gzip"});
}

// ---- small batches written here ----

// Record r of batch `seed`: label (seed + r) % 10 and pixels from a hash, distinct per record.
Bytes batch_bytes(int records, int seed) {
  Bytes out;
  std::uint32_t state = 2654435761u * static_cast<std::uint32_t>(seed + 1);
  for (int r = 0; r < records; ++r) {
    out.push_back(static_cast<std::uint8_t>((seed + r) % 10));
    for (std::size_t i = 0; i < kImageBytes; ++i) {
      state = state * 1664525u + 1013904223u;
      out.push_back(static_cast<std::uint8_t>(state >> 24));
    }
  }
  return out;
}

const std::array<int, 6> kSmallRecords = {1, 2, 3, 1, 2, 4};  // per file, test_batch last

// ROOT/cifar-10-batches-bin/ with six small batches and the class names; returns that folder.
fs::path write_small_cifar(const fs::path& root) {
  const fs::path folder = root / "cifar-10-batches-bin";
  fs::create_directories(folder);
  for (std::size_t b = 0; b < kBatchFiles.size(); ++b)
    write_bytes(folder / kBatchFiles[b], batch_bytes(kSmallRecords[b], static_cast<int>(b)));
  const std::string names =
      "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";
  write_bytes(folder / "batches.meta.txt", Bytes(names.begin(), names.end()));
  return folder;
}

void expect_small_cifar(const Cifar10Splits& splits) {
  ASSERT_EQ(splits.train->size(), 9);
  ASSERT_EQ(splits.test->size(), 4);
  EXPECT_EQ(splits.train->describe(), "CIFAR-10 train, 9 images 3x32x32, 10 classes");
  EXPECT_EQ(splits.class_names.size(), 10u);
  std::int64_t first = 0;
  std::string report;
  for (int b = 0; b < 5; ++b) {
    EXPECT_EQ(mismatches(*splits.train, first, batch_bytes(kSmallRecords[b], b), report), 0)
        << report;
    first += kSmallRecords[b];
  }
  EXPECT_EQ(mismatches(*splits.test, 0, batch_bytes(4, 5), report), 0) << report;
}

TEST(Cifar10Small, AnyWholeNumberOfRecordsFromEveryKindOfPath) {
  testing::TempDir tmp;
  const fs::path folder = write_small_cifar(tmp.path() / "unpacked");
  fs::create_directories(tmp.path() / "packed");
  const fs::path archive = tmp.path() / "packed" / "cifar-10-binary.tar.gz";
  make_tar_gz(tmp.path() / "unpacked", "cifar-10-batches-bin", archive);
  const fs::path renamed = tmp.path() / "cifar.tgz";
  fs::copy_file(archive, renamed);
  for (const fs::path& path : {folder, tmp.path() / "unpacked", archive, tmp.path() / "packed",
                               renamed, fs::path(folder.string() + "/")}) {
    SCOPED_TRACE(path.string());
    expect_small_cifar(load_cifar10(path));
  }
}

TEST(Cifar10Small, ClassNamesAreOptional) {
  testing::TempDir tmp;
  const fs::path folder = write_small_cifar(tmp.path());
  fs::remove(folder / "batches.meta.txt");
  const Cifar10Splits splits = load_cifar10(folder);
  EXPECT_TRUE(splits.class_names.empty());
  EXPECT_EQ(splits.train->size(), 9);
  write_bytes(folder / "batches.meta.txt", {'c', 'a', 't', '\n', 'd', 'o', 'g', '\n'});
  expect_error([&] { load_cifar10(folder); },
               {(folder / "batches.meta.txt").string(), "2 class names, expected 10"});
}

TEST(Cifar10Corrupt, BatchTruncatedMidRecord) {
  testing::TempDir tmp;
  const fs::path folder = write_small_cifar(tmp.path());
  Bytes batch = batch_bytes(3, 1);
  batch.resize(2 * kRecordBytes + 100);
  write_bytes(folder / "data_batch_2.bin", batch);
  const std::vector<std::string> problem = {
      "size 6246 bytes is not a whole number of 3073-byte records", "2 records and 100 bytes over",
      "expected a multiple of 3073"};
  std::vector<std::string> words = problem;
  words.push_back((folder / "data_batch_2.bin").string());
  expect_error([&] { load_cifar10(folder); }, words);
  // Inside an archive the message names the archive and the member.
  make_tar_gz(tmp.path(), "cifar-10-batches-bin", tmp.path() / "short.tar.gz");
  words = problem;
  words.push_back((tmp.path() / "short.tar.gz").string() +
                  ": cifar-10-batches-bin/data_batch_2.bin");
  expect_error([&] { load_cifar10(tmp.path() / "short.tar.gz"); }, words);
}

TEST(Cifar10Corrupt, EmptyBatch) {
  testing::TempDir tmp;
  const fs::path folder = write_small_cifar(tmp.path());
  write_bytes(folder / "data_batch_4.bin", {});
  expect_error([&] { load_cifar10(folder); },
               {(folder / "data_batch_4.bin").string(), "empty batch file"});
}

TEST(Cifar10Corrupt, LabelTen) {
  testing::TempDir tmp;
  const fs::path folder = write_small_cifar(tmp.path());
  Bytes batch = batch_bytes(4, 5);
  batch[2 * kRecordBytes] = 10;
  write_bytes(folder / "test_batch.bin", batch);
  expect_error([&] { load_cifar10(folder); },
               {(folder / "test_batch.bin").string(), "label 10 in record 2", "at byte 6146",
                "labels are 0..9"});
}

TEST(Cifar10Corrupt, MissingDataBatch3) {
  testing::TempDir tmp;
  const fs::path folder = write_small_cifar(tmp.path());
  fs::remove(folder / "data_batch_3.bin");
  for (const fs::path& path : {folder, tmp.path()})
    expect_error([&] { load_cifar10(path); }, {folder.string() + " has no data_batch_3.bin",
                                               "expected data_batch_1..5.bin and test_batch.bin"});
  make_tar_gz(tmp.path(), "cifar-10-batches-bin", tmp.path() / "four.tar.gz");
  expect_error(
      [&] { load_cifar10(tmp.path() / "four.tar.gz"); },
      {(tmp.path() / "four.tar.gz").string() + " has no cifar-10-batches-bin/data_batch_3.bin",
       "expected data_batch_1..5.bin and test_batch.bin"});
}

TEST(Cifar10Corrupt, DamagedArchives) {
  testing::TempDir tmp;
  write_small_cifar(tmp.path());
  const fs::path good = tmp.path() / "good.tar.gz";
  make_tar_gz(tmp.path(), "cifar-10-batches-bin", good);
  const Bytes archive = read_bytes(good);
  ASSERT_GT(archive.size(), 30000u);  // the pixels do not compress
  const fs::path bad = tmp.path() / "cifar-10-binary.tar.gz";

  write_bytes(bad, Bytes(archive.begin(),
                         archive.begin() + static_cast<std::ptrdiff_t>(archive.size() / 2)));
  expect_error([&] { load_cifar10(bad); }, {bad.string(), "truncated gzip stream"});

  Bytes garbage = archive;
  for (std::size_t i = archive.size() / 2; i < archive.size() / 2 + 64; ++i)
    garbage[i] = static_cast<std::uint8_t>(i * 101 + 7);
  write_bytes(bad, garbage);
  expect_error([&] { load_cifar10(bad); }, {bad.string(), "corrupt"});

  write_bytes(bad, Bytes(archive.begin(), archive.end() - 4));  // the gzip trailer's length cut
  expect_error([&] { load_cifar10(bad); }, {bad.string(), "truncated gzip stream"});

  write_bytes(bad, make_tar(tmp.path(), "cifar-10-batches-bin"));  // tar, never gzip'd
  expect_error([&] { load_cifar10(bad); }, {bad.string(), "not a gzip file"});
}

TEST(Cifar10Corrupt, ArchiveWithoutACifarFolder) {
  testing::TempDir tmp;
  fs::create_directories(tmp.path() / "cifar-10-batches-py");
  write_bytes(tmp.path() / "cifar-10-batches-py" / "data_batch_1", batch_bytes(1, 0));
  const fs::path archive = tmp.path() / "cifar-10-python.tar.gz";
  make_tar_gz(tmp.path(), "cifar-10-batches-py", archive);
  expect_error([&] { load_cifar10(archive); },
               {archive.string(), "no cifar-10-batches-bin/ members", "binary version"});
}

TEST(Cifar10Corrupt, NothingThere) {
  testing::TempDir tmp;
  expect_error([&] { load_cifar10(tmp.path() / "missing.tar.gz"); },
               {(tmp.path() / "missing.tar.gz").string(), "not found", "cifar-10-binary.tar.gz"});
  expect_error([&] { load_cifar10(tmp.path()); },
               {tmp.path().string(), "holds no CIFAR-10 data", "cifar-10-batches-bin folder"});
}

// ---- the tar.gz reader ----

// DIR/tree/ with files of known bytes under a path too long for the 100-byte name field.
struct TarTree {
  fs::path root;
  std::string long_path = "tree/" + std::string(60, 'a') + "/" + std::string(60, 'b') + "/" +
                          std::string(50, 'c') + ".bin";
  std::map<std::string, Bytes> files = {{"tree/short.bin", batch_bytes(1, 3)},
                                        {"tree/empty.bin", {}},
                                        {"tree/skip.txt", {'n', 'o'}},
                                        {long_path, batch_bytes(2, 4)}};

  explicit TarTree(const fs::path& dir) : root(dir) {
    for (const auto& [name, bytes] : files) {
      fs::create_directories((root / name).parent_path());
      write_bytes(root / name, bytes);
    }
    fs::create_directories(root / "tree" / "subdir.bin");  // a directory entry, never returned
    fs::create_symlink("short.bin", root / "tree" / "link.bin");  // a symlink entry, likewise
  }
};

bool wanted_bin(std::string_view name) {
  return name.ends_with(".bin");
}

TEST(TarGz, EveryFormatGivesTheWantedRegularFilesWithTheirFullNames) {
  testing::TempDir tmp;
  const TarTree tree(tmp.path());
  // gnu: a long-name entry; ustar: the prefix field; pax: a path record.
  for (const std::string format : {"gnu", "ustar", "pax"}) {
    SCOPED_TRACE(format);
    const fs::path archive = tmp.path() / (format + ".tar.gz");
    make_tar_gz(tmp.path(), "tree", archive, format);
    const TarMembers members = read_tar_gz(archive, wanted_bin);
    std::set<std::string> names;
    for (const auto& [name, bytes] : members) names.insert(name);
    EXPECT_EQ(names, (std::set<std::string>{"tree/short.bin", "tree/empty.bin", tree.long_path}));
    for (const auto& [name, bytes] : members) EXPECT_EQ(bytes, tree.files.at(name)) << name;
  }
}

TEST(TarGz, MemberShorterThanItsHeaderSays) {
  testing::TempDir tmp;
  const TarTree tree(tmp.path());
  Bytes tar = make_tar(tmp.path(), "tree/short.bin");
  ASSERT_GE(tar.size(), 512 + kRecordBytes);
  tar.resize(512 + 1000);  // the header and 1000 of the member's 3073 bytes, well gzip'd
  const fs::path archive = tmp.path() / "short.tar.gz";
  write_bytes(archive, gzip_bytes(tar));
  expect_error([&] { read_tar_gz(archive, wanted_bin); },
               {archive.string(), "member 'tree/short.bin' is shorter than its header says",
                "3073 bytes in the header", "ends after 1000"});
  expect_error([&] { read_tar_gz(archive, [](std::string_view) { return false; }); },
               {archive.string(), "member 'tree/short.bin' is shorter"});  // skipped, still checked
  tar.resize(300);                                                         // inside the header
  write_bytes(archive, gzip_bytes(tar));
  expect_error([&] { read_tar_gz(archive, wanted_bin); },
               {archive.string(), "truncated tar archive", "inside the header"});
}

TEST(TarGz, HeaderChecksumIsChecked) {
  testing::TempDir tmp;
  const TarTree tree(tmp.path());
  Bytes tar = make_tar(tmp.path(), "tree/short.bin");
  tar[5] ^= 0x01;  // one bit of the member's name
  const fs::path archive = tmp.path() / "flipped.tar.gz";
  write_bytes(archive, gzip_bytes(tar));
  expect_error([&] { read_tar_gz(archive, wanted_bin); },
               {archive.string(), "corrupt tar header at byte 0", "checksum"});
}

TEST(TarGz, ConcatenatedGzipMembersAreOneArchive) {
  testing::TempDir tmp;
  const TarTree tree(tmp.path());
  const Bytes tar = make_tar(tmp.path(), "tree/short.bin");
  Bytes packed = gzip_bytes(Bytes(tar.begin(), tar.begin() + 700));
  const Bytes rest = gzip_bytes(Bytes(tar.begin() + 700, tar.end()));
  packed.insert(packed.end(), rest.begin(), rest.end());
  write_bytes(tmp.path() / "two.tar.gz", packed);
  const TarMembers members = read_tar_gz(tmp.path() / "two.tar.gz", wanted_bin);
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members.at("tree/short.bin"), tree.files.at("tree/short.bin"));
}

// ---- RandomCropDataset ----

constexpr int kC = 2, kH = 5, kW = 6, kSide = 3;

// Two examples of 2x5x6 whose 120 pixels are all different, scaled to [0, 1] by ImageDataset.
std::shared_ptr<ImageDataset> distinct_pixels() {
  Bytes pixels(2 * kC * kH * kW);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(2 * i + 1);
  return std::make_shared<ImageDataset>("distinct", Shape{kC, kH, kW}, 10, pixels,
                                        std::vector<std::int32_t>{3, 7});
}

// The side x side crop of example `index` at (top, left), mirrored left-right if `flipped`,
// cut here from the base's own output.
std::vector<float> expected_crop(int index, int top, int left, bool flipped) {
  std::vector<float> full(kC * kH * kW);
  distinct_pixels()->get(index, full.data());
  std::vector<float> out;
  for (int c = 0; c < kC; ++c)
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kSide; ++x)
        out.push_back(full[(c * kH + top + y) * kW + left + (flipped ? kSide - 1 - x : x)]);
  return out;
}

struct CropFound {
  int top, left;
  bool flipped;
  auto operator<=>(const CropFound&) const = default;
};

// Which crop `values` is, by trying them all; fails the test if it is none of them.
CropFound find_crop(int index, const std::vector<float>& values) {
  for (int top = 0; top + kSide <= kH; ++top)
    for (int left = 0; left + kSide <= kW; ++left)
      for (bool flipped : {false, true})
        if (values == expected_crop(index, top, left, flipped)) return {top, left, flipped};
  ADD_FAILURE() << "the output is no crop of example " << index;
  return {-1, -1, false};
}

TEST(RandomCrop, ShapeDescriptionAndCentreCrop) {
  const auto crops = random_crop(distinct_pixels(), kSide);
  EXPECT_EQ(crops->size(), 2);
  EXPECT_EQ(crops->num_classes(), 10);
  EXPECT_EQ(crops->example_shape(), (Shape{kC, kSide, kSide}));
  EXPECT_EQ(crops->describe(), "distinct, 3x3 crops (random with flips in training, centre in evaluation)");
  std::vector<float> out(kC * kSide * kSide);
  for (int index : {0, 1}) {
    EXPECT_EQ(crops->get(index, out.data()), index == 0 ? 3 : 7);
    EXPECT_EQ(out, expected_crop(index, (kH - kSide) / 2, (kW - kSide) / 2, false));
  }
}

TEST(RandomCrop, EveryDrawIsACropAndAllCropsAndFlipsOccurEvenly) {
  const auto crops = random_crop(distinct_pixels(), kSide);
  std::vector<float> out(kC * kSide * kSide);
  std::map<CropFound, int> seen;
  Rng rng(11);
  constexpr int kDraws = 4800;
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t draw = rng.next_u64();
    const int index = i % 2;
    ASSERT_EQ(crops->get_augmented(index, out.data(), draw), index == 0 ? 3 : 7);
    const CropFound crop = find_crop(index, out);
    ASSERT_GE(crop.top, 0);
    ++seen[crop];
    std::vector<float> again(out.size());
    crops->get_augmented(index, again.data(), draw);
    ASSERT_EQ(again, out) << "draw " << draw << " gave two different crops";
  }
  const int outcomes = 2 * (kH - kSide + 1) * (kW - kSide + 1);  // 24
  ASSERT_EQ(static_cast<int>(seen.size()), outcomes);
  // Each outcome expects 200 of 4800; a binomial's deviation is 14, so 120..280 is > 5 sigma.
  for (const auto& [crop, count] : seen) {
    EXPECT_GT(count, 120) << crop.top << "," << crop.left << " flipped " << crop.flipped;
    EXPECT_LT(count, 280) << crop.top << "," << crop.left << " flipped " << crop.flipped;
  }
}

TEST(RandomCrop, FullSideCropsOnlyFlip) {
  const auto crops = random_crop(distinct_pixels(), kH);  // 5x5 of 5x6: two positions across
  std::vector<float> centre(kC * kH * kH), out(centre.size());
  crops->get(0, centre.data());
  std::set<std::vector<float>> outputs;
  for (std::uint64_t draw = 0; draw < 16; ++draw) {
    crops->get_augmented(0, out.data(), draw);
    outputs.insert(out);
  }
  EXPECT_EQ(outputs.size(), 4u);
  EXPECT_EQ(outputs.count(centre), 1u);
}

class SkippingDataset final : public Dataset {
 public:
  std::int64_t size() const override { return 1; }
  Shape example_shape() const override { return {1, 4, 8}; }
  int num_classes() const override { return 2; }
  std::string describe() const override { return "skipping"; }
  std::int32_t get(std::int64_t, float* out) const override {
    for (int i = 0; i < 32; ++i) out[i] = static_cast<float>(i);
    return 1;
  }
  std::int64_t skipped_files() const override { return 3; }
};

TEST(RandomCrop, ForwardsSkippedFilesAndChecksTheSide) {
  const auto base = std::make_shared<SkippingDataset>();
  EXPECT_EQ(random_crop(base, 4)->skipped_files(), 3);
  expect_error([&] { random_crop(base, 5); },
               {"skipping", "cannot take 5x5 crops of [1, 4, 8]", "between 1 and 4"});
  expect_error([&] { random_crop(base, 0); }, {"skipping", "between 1 and 4"});
  expect_error([&] { random_crop(nullptr, 3); }, {"random_crop needs a dataset"});
}

std::vector<Batch> epoch_batches(DataLoader& loader, int epoch) {
  loader.start_epoch(epoch);
  std::vector<Batch> batches;
  for (Batch batch; loader.next(batch);) batches.push_back(batch);
  return batches;
}

std::vector<float> epoch_pixels(DataLoader& loader, int epoch) {
  std::vector<float> pixels;
  for (const Batch& batch : epoch_batches(loader, epoch))
    pixels.insert(pixels.end(), batch.images.data<float>(),
                  batch.images.data<float>() + batch.images.numel());
  return pixels;
}

TEST(RandomCrop, LoaderDrawsNewCropsEachEpochAndTheSameOnRepeat) {
  const auto crops = random_crop(distinct_pixels(), kSide);
  DataLoaderOptions options{.batch_size = 2, .shuffle = false, .seed = 5, .augment = true};
  DataLoader loader(crops, options);
  DataLoader twin(crops, options);
  const std::vector<float> epoch0 = epoch_pixels(loader, 0);
  ASSERT_EQ(epoch0.size(), 2u * kC * kSide * kSide);
  EXPECT_NE(epoch_pixels(loader, 1), epoch0);
  EXPECT_EQ(epoch_pixels(twin, 0), epoch0);
  EXPECT_EQ(epoch_pixels(loader, 0), epoch0);
  for (const Batch& batch : epoch_batches(loader, 2))  // still crops of the right examples
    for (std::size_t i = 0; i < batch.labels.size(); ++i) {
      const float* image = batch.images.data<float>() + i * kC * kSide * kSide;
      find_crop(batch.labels[i] == 3 ? 0 : 1,
                std::vector<float>(image, image + kC * kSide * kSide));
    }
  options.augment = false;  // evaluation: the centre crop every epoch
  DataLoader plain(crops, options);
  EXPECT_EQ(epoch_pixels(plain, 0), epoch_pixels(plain, 1));
}

}  // namespace
}  // namespace tunecnn
