// Finds CIFAR-10's batch files (in a folder or inside the distributed .tar.gz), checks every
// record and gathers them into the two in-memory splits.
#include "datasets/cifar10.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <span>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "datasets/tar_gz.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

constexpr int kNumClasses = 10;
constexpr std::int64_t kImageBytes = 3 * 32 * 32;
constexpr std::int64_t kRecordBytes = 1 + kImageBytes;  // the label byte, then R, G, B planes
constexpr std::string_view kFolder = "cifar-10-batches-bin";
constexpr std::string_view kArchive = "cifar-10-binary.tar.gz";
constexpr std::string_view kMeta = "batches.meta.txt";
constexpr std::array<std::string_view, 6> kBatchFiles = {"data_batch_1.bin", "data_batch_2.bin",
                                                         "data_batch_3.bin", "data_batch_4.bin",
                                                         "data_batch_5.bin", "test_batch.bin"};
constexpr auto kTrainFiles = std::span(kBatchFiles).first<5>();
constexpr auto kTestFiles = std::span(kBatchFiles).last<1>();
constexpr std::string_view kExpected = "expected data_batch_1..5.bin and test_batch.bin";
constexpr std::string_view kWhatToPass =
    "expected cifar-10-binary.tar.gz, its cifar-10-batches-bin folder, or a folder holding either";

// Mean and standard deviation of each channel (R, G, B) over all pixels of the 50000 training
// images, scaled to [0, 1]. (The 0.2023, 0.1994, 0.2010 often quoted as CIFAR-10's std are
// means of per-image deviations, which come out smaller and leave the inputs' variance above 1.)
const std::vector<float> kMean = {0.4914f, 0.4822f, 0.4465f};
const std::vector<float> kStddev = {0.2470f, 0.2435f, 0.2616f};

// A file's bytes and the name errors use for it: its path, or "ARCHIVE: MEMBER".
struct NamedBytes {
  std::string name;
  std::vector<std::uint8_t> bytes;
};
// Keyed by file name: "data_batch_1.bin", "batches.meta.txt".
using CifarFiles = std::map<std::string, NamedBytes, std::less<>>;

struct SplitData {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
};

bool is_batch_file(std::string_view name) {
  return std::find(kBatchFiles.begin(), kBatchFiles.end(), name) != kBatchFiles.end();
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  TUNECNN_CHECK(in.good(), path.string(), ": cannot open for reading");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  TUNECNN_CHECK(in.good() || bytes.empty(), path.string(), ": read error");
  return bytes;
}

CifarFiles read_folder(const fs::path& folder) {
  CifarFiles files;
  for (std::string_view name : kBatchFiles) {
    const fs::path file = folder / name;
    TUNECNN_CHECK(fs::is_regular_file(file), folder.string(), " has no ", name, "; ", kExpected);
    files[std::string(name)] = {file.string(), read_file(file)};
  }
  if (fs::is_regular_file(folder / kMeta))
    files[std::string(kMeta)] = {(folder / kMeta).string(), read_file(folder / kMeta)};
  return files;
}

CifarFiles read_archive(const fs::path& archive) {
  const auto wanted = [](std::string_view member) {
    const fs::path path(member);
    const std::string file = path.filename().string();
    return path.parent_path().filename() == kFolder && (is_batch_file(file) || file == kMeta);
  };
  TarMembers members = read_tar_gz(archive, wanted);
  TUNECNN_CHECK(!members.empty(), archive.string(), ": no ", kFolder, "/ members in this archive; ",
                kExpected, " in a ", kFolder,
                " folder (CIFAR-10's binary version, not the python "
                "or matlab one)");
  CifarFiles files;
  for (auto& [member, bytes] : members)
    files[fs::path(member).filename().string()] = {archive.string() + ": " + member,
                                                   std::move(bytes)};
  for (std::string_view name : kBatchFiles)
    TUNECNN_CHECK(files.contains(name), archive.string(), " has no ", kFolder, "/", name, "; ",
                  kExpected);
  return files;
}

bool holds_batch_files(const fs::path& folder) {
  return std::any_of(kBatchFiles.begin(), kBatchFiles.end(),
                     [&](std::string_view name) { return fs::exists(folder / name); });
}

CifarFiles read_cifar_files(const fs::path& path) {
  std::error_code error;
  const auto status = fs::status(path, error);
  TUNECNN_CHECK(fs::exists(status), path.string(), ": not found; ", kWhatToPass);
  if (!fs::is_directory(status)) return read_archive(path);
  if (fs::is_directory(path / kFolder)) return read_folder(path / kFolder);
  const fs::path named = path.has_filename() ? path : path.parent_path();
  if (named.filename() == kFolder || holds_batch_files(path)) return read_folder(path);
  if (fs::is_regular_file(path / kArchive)) return read_archive(path / kArchive);
  TUNECNN_FAIL(path.string(), " holds no CIFAR-10 data: ", kWhatToPass);
}

// Moves the records of one batch file into the split, then frees the file's bytes.
void append_records(NamedBytes& batch, SplitData& split) {
  const auto size = static_cast<std::int64_t>(batch.bytes.size());
  TUNECNN_CHECK(size > 0, batch.name, ": empty batch file (0 bytes); expected ", kRecordBytes,
                "-byte records (1 label byte, 3072 pixel bytes)");
  TUNECNN_CHECK(size % kRecordBytes == 0, batch.name, ": size ", size,
                " bytes is not a whole number of ", kRecordBytes, "-byte records (",
                size / kRecordBytes, " records and ", size % kRecordBytes,
                " bytes over); expected a multiple of ", kRecordBytes,
                " (a full batch of 10000 "
                "records is 30730000 bytes): the file is truncated or not a CIFAR-10 batch");
  const std::uint8_t* data = batch.bytes.data();
  for (std::int64_t r = 0; r < size / kRecordBytes; ++r) {
    const std::uint8_t* record = data + r * kRecordBytes;
    TUNECNN_CHECK(record[0] < kNumClasses, batch.name, ": label ", int{record[0]}, " in record ", r,
                  " (counting from 0, at byte ", r * kRecordBytes, "); CIFAR-10 labels are 0..",
                  kNumClasses - 1, ": the file is damaged or not a CIFAR-10 batch");
    split.labels.push_back(record[0]);
    split.pixels.insert(split.pixels.end(), record + 1, record + kRecordBytes);
  }
  std::vector<std::uint8_t>().swap(batch.bytes);
}

std::shared_ptr<ImageDataset> make_split(const std::string& split_name, CifarFiles& files,
                                         std::span<const std::string_view> names) {
  SplitData split;
  std::size_t records = 0;
  for (std::string_view name : names)
    records += files.find(name)->second.bytes.size() / kRecordBytes;
  split.pixels.reserve(records * kImageBytes);
  split.labels.reserve(records);
  for (std::string_view name : names) append_records(files.find(name)->second, split);
  const std::string description = "CIFAR-10 " + split_name + ", " +
                                  std::to_string(split.labels.size()) + " images 3x32x32, " +
                                  std::to_string(kNumClasses) + " classes";
  auto dataset = std::make_shared<ImageDataset>(description, Shape{3, 32, 32}, kNumClasses,
                                                std::move(split.pixels), std::move(split.labels));
  dataset->set_normalisation(kMean, kStddev);
  return dataset;
}

// One class name per line ("airplane", ...); blank lines (the file ends with one) are ignored.
std::vector<std::string> class_names(const CifarFiles& files) {
  const auto meta = files.find(kMeta);
  if (meta == files.end()) return {};
  std::vector<std::string> names;
  std::string line;
  for (std::uint8_t byte : meta->second.bytes) {
    if (byte != '\n' && byte != '\r') line.push_back(static_cast<char>(byte));
    if (byte != '\n') continue;
    if (!line.empty()) names.push_back(line);
    line.clear();
  }
  if (!line.empty()) names.push_back(line);
  TUNECNN_CHECK(names.size() == kNumClasses, meta->second.name, ": ", names.size(),
                " class names, expected ", kNumClasses, " (one per line)");
  return names;
}

}  // namespace

Cifar10Splits load_cifar10(const fs::path& path) {
  CifarFiles files = read_cifar_files(path);
  Cifar10Splits splits;
  splits.class_names = class_names(files);
  splits.train = make_split("train", files, kTrainFiles);
  splits.test = make_split("test", files, kTestFiles);
  if (static_cast<int>(splits.class_names.size()) == kNumClasses) {
    splits.train->set_class_names(splits.class_names);
    splits.test->set_class_names(splits.class_names);
  }
  return splits;
}

ChannelAffine cifar10_normalisation() {
  ChannelAffine affine;
  for (int c = 0; c < 3; ++c) {
    affine.scale[c] = 1.0f / (255.0f * kStddev[c]);
    affine.shift[c] = -kMean[c] / kStddev[c];
  }
  return affine;
}

}  // namespace tunecnn
