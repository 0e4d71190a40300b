// Loading lists files and parses the labels file; nothing is decoded until an example is asked
// for, so a 1.28M-image split loads in the time a directory walk takes. Each access reads the
// whole file into memory and decodes it from there: a JPEG (by its first bytes, not its name) with
// libjpeg-turbo (datasets/jpeg_decode.h), anything else with stb_image, which now sees only PNG.
// An unreadable file and an undecodable one then report alike, with the decoder's reason (each
// JpegDecoder has its own error state; stb_image's is thread-local in stb_image >= 2.24, so
// concurrent TBB tasks do not see each other's). Known-bad files are remembered in one atomic
// flag each, so a bad file costs one failed decode per run, not one per epoch.
#include "datasets/image_folder.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/error.h"
#include "datasets/image_resize.h"
#include "datasets/jpeg_decode.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
// cmake/dependencies.cmake finds the folder holding stb_image.h (Debian: /usr/include/stb).
#include <stb_image.h>

namespace tunecnn {

namespace fs = std::filesystem;

struct DecodedImage {
  std::vector<std::uint8_t> rgb;  // HWC
  int width = 0, height = 0;
};

namespace {

constexpr int kChannels = 3;
// The most pixels a file may claim: its header is read before anything is decoded, so a small
// file that claims 20000x20000 (1.2 GB of RGB) is skipped rather than decoded. 64 Mpixel passes
// any photograph of ImageNet's (the largest is about 17 Mpixel).
constexpr std::int64_t kMaxPixels = std::int64_t{64} << 20;
// torchvision's ImageNet evaluation: resize to 256, crop 224.
constexpr int kResizeNumerator = 256, kResizeDenominator = 224;
constexpr float kMean[kChannels] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[kChannels] = {0.229f, 0.224f, 0.225f};

using Warn = std::function<void(std::string_view)>;

Warn warner(const ImageFolderOptions& options) {
  if (options.warn) return options.warn;
  return [](std::string_view message) { std::cerr << "warning: " << message << "\n"; };
}

// ---- reading and decoding ----

// "" when `bytes` now holds the file, else why not.
std::string read_file(const fs::path& path, std::vector<unsigned char>& bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "cannot open the file";
  const std::streamoff size = in.tellg();
  if (size < 0) return "cannot read the file";
  if (size == 0) return "the file is empty";
  if (size > INT_MAX) return "the file is larger than the 2 GiB an image file may have (stb_image's limit)";
  bytes.resize(static_cast<std::size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in) return "cannot read the file";
  return {};
}

// stb_image 2.27 trusts PNG chunk headers in two ways (found by fuzz/fuzz_image): it allocates
// an IDAT chunk's claimed length before reading it, so a 174-byte file claiming 1.2 GB gets the
// 1.2 GB; and it copies an empty IDAT chunk that precedes the image data into a still null
// buffer (undefined behaviour). The chunks are walked first, as stb_image walks them, up to IEND:
// a chunk longer than the rest of the file is refused ("" when none is, else why), and empty IDAT
// chunks before the data, which carry nothing in a valid PNG, are dropped.
std::string check_png_chunks(std::vector<unsigned char>& b) {
  static constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (b.size() < 8 || !std::equal(kSignature, kSignature + 8, b.begin())) return {};
  bool data_begun = false;
  for (std::size_t at = 8; at + 8 <= b.size();) {  // chunks: length, type, data, CRC
    const std::size_t length = (std::size_t{b[at]} << 24) | (std::size_t{b[at + 1]} << 16) |
                               (std::size_t{b[at + 2]} << 8) | b[at + 3];
    const std::string type(b.begin() + at + 4, b.begin() + at + 8);
    if (type == "IEND") return {};
    if (length > b.size() - at - 8)
      return "corrupt PNG: its '" + printable(type) + "' chunk at byte " + std::to_string(at) +
             " claims " + std::to_string(length) + " bytes, more than the " +
             std::to_string(b.size() - at - 8) + " left in the file";
    if (type == "IDAT" && length == 0 && !data_begun) {
      // Its CRC may be cut off at the end of the file (found by fuzz/fuzz_image_folder).
      b.erase(b.begin() + at, b.begin() + std::min(at + 12, b.size()));
      continue;
    }
    data_begun = data_begun || type == "IDAT";
    at += 12 + length;
  }
  return {};
}

// "" when a decoded image of width x height is within kMaxPixels, else why not.
std::string check_pixel_count(int width, int height) {
  if (std::int64_t{width} * height <= kMaxPixels) return {};
  return "its header claims " + std::to_string(width) + "x" + std::to_string(height) + " pixels, over the " +
         std::to_string(kMaxPixels >> 20) + " Mpixel a decoded image may have";
}

std::string decode_jpeg(const std::vector<unsigned char>& bytes, DecodedImage& out) {
  JpegDecoder decoder(bytes.data(), bytes.size());
  if (std::string why = decoder.read_header(out.width, out.height); !why.empty())
    return "not decodable (libjpeg-turbo: " + why + ")";
  if (std::string why = check_pixel_count(out.width, out.height); !why.empty()) return why;
  if (std::string why = decoder.decode(out.rgb); !why.empty()) return "not decodable (libjpeg-turbo: " + why + ")";
  return {};
}

// PNG, and whatever else is not a JPEG (stb_image then says it knows no such image type).
std::string decode_with_stb(std::vector<unsigned char>& bytes, DecodedImage& out) {
  if (std::string why = check_png_chunks(bytes); !why.empty()) return why;
  int width = 0, height = 0, channels_in_file = 0;
  if (stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &width, &height, &channels_in_file))
    if (std::string why = check_pixel_count(width, height); !why.empty()) return why;
  stbi_uc* rgb = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &width,
                                       &height, &channels_in_file, kChannels);
  if (rgb == nullptr) {
    const char* reason = stbi_failure_reason();
    return std::string("not decodable (stb_image: ") + (reason ? reason : "no reason given") + ")";
  }
  out.rgb.assign(rgb, rgb + std::size_t{kChannels} * width * height);
  stbi_image_free(rgb);
  out.width = width;
  out.height = height;
  return {};
}

// "" when `out` now holds the image as RGB, else why not.
std::string decode_image(const fs::path& path, DecodedImage& out) {
  thread_local std::vector<unsigned char> bytes;  // reused: one allocation per thread, not per file
  if (std::string why = read_file(path, bytes); !why.empty()) return why;
  return looks_like_jpeg(bytes.data(), bytes.size()) ? decode_jpeg(bytes, out) : decode_with_stb(bytes, out);
}

// A crop anywhere in the resized image, mirrored when the draw's low bit is set. Multiply-shift
// maps 31-32 random bits onto the positions; its bias is below 2^-20 for resized sides under 2048.
CropWindow random_crop(ResizedSize resized, int side, std::uint64_t draw) {
  const std::uint64_t columns = static_cast<std::uint64_t>(resized.width - side + 1);
  const std::uint64_t rows = static_cast<std::uint64_t>(resized.height - side + 1);
  return {static_cast<int>(((draw >> 32) * columns) >> 32),
          static_cast<int>((((draw >> 1) & 0x7FFFFFFFu) * rows) >> 31), side, (draw & 1u) != 0};
}

CropWindow centre_crop(ResizedSize resized, int side) {
  return {(resized.width - side) / 2, (resized.height - side) / 2, side, false};
}

// ---- listing ----

bool is_hidden(const fs::path& path) {
  // Dot entries are tool litter (macOS's ._x.JPEG, .ipynb_checkpoints), never classes or images.
  return path.filename().string().starts_with('.');
}

bool is_image(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

std::vector<fs::path> sorted_subfolders(const fs::path& folder) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_directory() && !is_hidden(entry.path())) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> sorted_images(const fs::path& folder) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && is_image(entry.path()) && !is_hidden(entry.path()))
      out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

struct Listing {
  std::vector<std::string> classes;
  std::vector<ImageFile> files;
};

void check_same_classes(const fs::path& folder, const std::vector<std::string>& found,
                        const std::vector<std::string>& given) {
  if (given.empty() || found == given) return;
  std::vector<std::string> missing, unexpected;
  std::set_difference(given.begin(), given.end(), found.begin(), found.end(),
                      std::back_inserter(missing));
  std::set_difference(found.begin(), found.end(), given.begin(), given.end(),
                      std::back_inserter(unexpected));
  TUNECNN_FAIL(
      "image folder ", folder.string(), " has ", found.size(), " class folders but ", given.size(),
      " classes were given (the training split's)",
      missing.empty() ? "" : "; missing: ", missing.empty() ? "" : missing.front(),
      unexpected.empty() ? "" : "; not in the list: ", unexpected.empty() ? "" : unexpected.front(),
      missing.empty() && unexpected.empty() ? "; the given list is not sorted" : "",
      ". Every split needs the same class folders");
}

Listing list_class_folders(const fs::path& folder, const std::vector<fs::path>& class_folders,
                           const ImageFolderOptions& options, const Warn& warn) {
  Listing listing;
  for (const fs::path& path : class_folders) listing.classes.push_back(path.filename().string());
  check_same_classes(folder, listing.classes, options.classes);
  for (std::size_t label = 0; label < class_folders.size(); ++label) {
    std::vector<fs::path> images = sorted_images(class_folders[label]);
    if (images.empty())
      warn("class folder " + class_folders[label].string() +
           " holds no images (.jpg, .jpeg, .png); it still " + "counts as class " +
           std::to_string(label) + " so labels match the other splits");
    for (fs::path& path : images)
      listing.files.push_back({std::move(path), static_cast<std::int32_t>(label)});
  }
  TUNECNN_CHECK(!listing.files.empty(), "image folder ", folder.string(),
                " holds no images (.jpg, .jpeg, .png) in its ", class_folders.size(),
                " class folders");
  return listing;
}

bool all_digits(const std::string& text) {
  return !text.empty() && text.size() < 10 &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// One labels file line's label: a class name, else a class index (a name wins, for classes that
// are themselves numbers).
std::int32_t parse_label(const std::string& token,
                         const std::unordered_map<std::string, std::int32_t>& by_name,
                         const std::vector<std::string>& classes, const std::string& where) {
  if (auto it = by_name.find(token); it != by_name.end()) return it->second;
  if (all_digits(token)) {
    const long long index = std::stoll(token);
    TUNECNN_CHECK(index < static_cast<long long>(classes.size()), where, ": class index ", token,
                  " is out of range (", classes.size(), " classes: 0 to ", classes.size() - 1, ")");
    return static_cast<std::int32_t>(index);
  }
  TUNECNN_FAIL(where, ": unknown class '", token, "' (not one of the ", classes.size(), " classes ",
               classes.front(), " ... ", classes.back(), ", nor a class index)");
}

void warn_unlabelled(const fs::path& folder, const fs::path& labels_file,
                     const std::unordered_map<std::string, std::size_t>& labelled,
                     const Warn& warn) {
  std::vector<std::string> unlabelled;
  for (const fs::path& path : sorted_images(folder))
    if (!labelled.contains(path.filename().string()))
      unlabelled.push_back(path.filename().string());
  if (unlabelled.empty()) return;
  std::string first;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, unlabelled.size()); ++i)
    first += (i ? ", " : "") + unlabelled[i];
  warn(std::to_string(unlabelled.size()) + " images in " + folder.string() +
       " have no line in labels file " + labels_file.string() + " and are left out (" + first +
       (unlabelled.size() > 3 ? ", ..." : "") + ")");
}

// Lines `filename label`, filename relative to the split folder.
Listing list_labelled(const fs::path& folder, const fs::path& labels_file,
                      const ImageFolderOptions& options, const Warn& warn) {
  TUNECNN_CHECK(!options.classes.empty(), "image folder ", folder.string(),
                " is read through labels file ", labels_file.string(),
                ", so it needs the class list (ImageFolderOptions::classes: the "
                "training split's classes()), which labels name or index");
  std::ifstream in(labels_file);
  TUNECNN_CHECK(in.good(), "cannot open labels file ", labels_file.string(), " for ",
                folder.string());
  std::unordered_map<std::string, std::int32_t> by_name;
  for (std::size_t i = 0; i < options.classes.size(); ++i)
    by_name.emplace(options.classes[i], static_cast<std::int32_t>(i));

  Listing listing{options.classes, {}};
  std::unordered_map<std::string, std::size_t> line_of;  // filename -> its line
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string name, label, extra;
    if (!(fields >> name)) continue;  // blank or comment only
    const std::string where =
        "labels file " + labels_file.string() + " line " + std::to_string(number);
    TUNECNN_CHECK((fields >> label) && !(fields >> extra), where,
                  ": expected 'filename label' (label: a class name such as ",
                  options.classes.front(), ", or a class index), got '", line, "'");
    const std::int32_t index = parse_label(label, by_name, options.classes, where);
    const auto [previous, inserted] = line_of.emplace(name, number);
    TUNECNN_CHECK(inserted, where, ": ", name, " is already labelled on line ", previous->second);
    std::error_code error;  // a name too long for the file system is an error, not an exception
    const bool present = fs::is_regular_file(folder / name, error);
    const bool missing = !error || error == std::errc::no_such_file_or_directory;
    TUNECNN_CHECK(present, where, ": ", (folder / name).string(),
                  missing ? " does not exist" : " cannot be read (" + error.message() + ")");
    listing.files.push_back({folder / name, index});
  }
  TUNECNN_CHECK(!in.bad(), "cannot read labels file ", labels_file.string());
  TUNECNN_CHECK(!listing.files.empty(), "labels file ", labels_file.string(),
                " lists no images for ", folder.string());
  std::sort(listing.files.begin(), listing.files.end(),
            [](const ImageFile& a, const ImageFile& b) { return a.path < b.path; });
  warn_unlabelled(folder, labels_file, line_of, warn);
  return listing;
}

// "imagenette-mini" for "data/imagenette-mini/" as for "data/imagenette-mini".
std::string folder_name(const fs::path& root) {
  fs::path path = fs::absolute(root).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  return path.filename().empty() ? root.string() : path.filename().string();
}

}  // namespace

ChannelAffine imagenet_normalisation() {
  ChannelAffine affine;
  for (int c = 0; c < kChannels; ++c) {
    affine.scale[c] = 1.0f / (255.0f * kStd[c]);
    affine.shift[c] = -kMean[c] / kStd[c];
  }
  return affine;
}

int default_resize_side(int side) {
  return (side * kResizeNumerator + kResizeDenominator / 2) / kResizeDenominator;
}

void image_file_centre_crop(const fs::path& file, int side, int resize_side, const ChannelAffine& affine, float* out) {
  DecodedImage image;
  if (const std::string why = decode_image(file, image); !why.empty()) TUNECNN_FAIL(file.string(), ": ", why);
  const ResizedSize resized = resized_size(image.width, image.height, resize_side);
  resize_crop(image.rgb.data(), image.width, image.height, resized, centre_crop(resized, side), affine, out);
}

// ---- the data set ----

ImageFolderDataset::ImageFolderDataset(std::string name, fs::path folder,
                                       std::vector<std::string> classes,
                                       std::vector<ImageFile> files,
                                       const ImageFolderOptions& options)
    : name_(std::move(name)),
      folder_(std::move(folder)),
      classes_(std::move(classes)),
      files_(std::move(files)),
      side_(options.side),
      resize_side_(options.resize_side != 0 ? options.resize_side
                                            : default_resize_side(options.side)),
      warn_(warner(options)),
      bad_(std::make_unique<std::atomic<bool>[]>(files_.size())) {
  TUNECNN_CHECK(side_ > 0, "image folder ", folder_.string(), ": side must be positive, got ",
                side_);
  TUNECNN_CHECK(resize_side_ >= side_, "image folder ", folder_.string(), ": resize side ",
                resize_side_, " is smaller than the crop side ", side_, "; use at least ", side_,
                " (or 0 for ", default_resize_side(side_), ")");
  TUNECNN_CHECK(!files_.empty(), "image folder ", folder_.string(), " holds no images");
  for (const ImageFile& file : files_)
    TUNECNN_CHECK(file.label >= 0 && file.label < num_classes(), "image folder ", folder_.string(),
                  ": ", file.path.string(), " has label ", file.label, " outside the ",
                  num_classes(), " classes");
}

std::string ImageFolderDataset::describe() const {
  return name_ + ", " + std::to_string(size()) + " images, " + std::to_string(num_classes()) +
         " classes, crops " + std::to_string(kChannels) + "x" + std::to_string(side_) + "x" +
         std::to_string(side_) + " from shorter side " + std::to_string(resize_side_) + ", " +
         std::to_string(skipped_files()) + " skipped";
}

std::int32_t ImageFolderDataset::get(std::int64_t index, float* out) const {
  DecodedImage image;
  const std::int64_t served = decode_or_replace(index, image);
  const ResizedSize resized = resized_size(image.width, image.height, resize_side_);
  resize_crop(image.rgb.data(), image.width, image.height, resized, centre_crop(resized, side_),
              imagenet_normalisation(), out);
  return files_[served].label;
}

std::int32_t ImageFolderDataset::get_augmented(std::int64_t index, float* out,
                                               std::uint64_t draw) const {
  DecodedImage image;
  const std::int64_t served = decode_or_replace(index, image);
  const ResizedSize resized = resized_size(image.width, image.height, resize_side_);
  resize_crop(image.rgb.data(), image.width, image.height, resized,
              random_crop(resized, side_, draw), imagenet_normalisation(), out);
  return files_[served].label;
}

std::int64_t ImageFolderDataset::decode_or_replace(std::int64_t index, DecodedImage& image) const {
  const std::int64_t n = size();
  TUNECNN_CHECK(index >= 0 && index < n, describe(), ": example ", index, " does not exist (0 to ",
                n - 1, ")");
  for (std::int64_t step = 0; step < n; ++step) {
    const std::int64_t i = (index + step) % n;
    if (bad_[i].load(std::memory_order_relaxed)) continue;
    const std::string why = decode_image(files_[i].path, image);
    if (why.empty()) return i;
    mark_bad(i, why);
  }
  TUNECNN_FAIL("image folder ", folder_.string(), ": none of its ", n,
               " images could be decoded (each is named in a warning); check the files, or point "
               "--data-dir at another copy");
}

void ImageFolderDataset::mark_bad(std::int64_t index, const std::string& reason) const {
  if (bad_[index].exchange(true)) return;  // another thread met it first and warned
  skipped_.fetch_add(1);
  warn("skipping " + files_[index].path.string() + ": " + reason +
       "; the next image that decodes is served in its place");
}

void ImageFolderDataset::warn(std::string_view message) const {
  std::lock_guard lock(warn_mutex_);
  warn_(message);
}

// ---- loading ----

std::shared_ptr<ImageFolderDataset> load_image_folder(const fs::path& root,
                                                      const std::string& split,
                                                      const ImageFolderOptions& options) {
  const fs::path folder = root / split;
  TUNECNN_CHECK(fs::is_directory(folder), "image folder ", folder.string(),
                " does not exist (expected ROOT/", split, "/<class>/*.JPEG, or ROOT/", split,
                "/*.JPEG with a labels file)");
  const std::vector<fs::path> class_folders = sorted_subfolders(folder);
  fs::path labels_file = options.labels_file;
  if (labels_file.empty() && class_folders.empty() && fs::exists(root / (split + "_labels.txt")))
    labels_file = root / (split + "_labels.txt");
  TUNECNN_CHECK(!labels_file.empty() || !class_folders.empty(), "image folder ", folder.string(),
                " has no class folders and there is no labels file ",
                (root / (split + "_labels.txt")).string(), " (expected ", folder.string(),
                "/<class>/*.JPEG, or ", folder.string(),
                "/*.JPEG with 'filename wnid' lines in that labels file)");
  TUNECNN_CHECK(labels_file.empty() || fs::is_regular_file(labels_file), "labels file ",
                labels_file.string(), " for image folder ", folder.string(), " does not exist");
  const Warn warn = warner(options);
  Listing listing = labels_file.empty() ? list_class_folders(folder, class_folders, options, warn)
                                        : list_labelled(folder, labels_file, options, warn);
  return std::make_shared<ImageFolderDataset>(folder_name(root) + " " + split, folder,
                                              std::move(listing.classes), std::move(listing.files),
                                              options);
}

}  // namespace tunecnn
