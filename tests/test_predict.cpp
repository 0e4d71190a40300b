// `predict` (apps/training/predict_command.h): an image file is read exactly as its data set reads
// that image as a test example (ImageNet's JPEG through the same crop; an MNIST digit written as a
// PNG comes back as the same example), so predict's classes are the network's on the test view;
// names come from the checkpoint; bad files and command lines are named.
#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/training/data_sources.h"
#include "apps/training/predict_command.h"
#include "apps/training/trainer.h"
#include "core/tensor_math.h"
#include "datasets/image_folder.h"
#include "datasets/mnist.h"
#include "tests/support/expect_error.h"
#include "tests/support/scoped_env.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

// Example `index` of an MNIST-like set as the 8-bit grey PNG it came from.
fs::path write_png(const Dataset& data, std::int64_t index, const ChannelAffine& norm, const fs::path& file) {
  std::vector<float> example(28 * 28);
  data.get(index, example.data());
  std::vector<unsigned char> grey(example.size());
  for (std::size_t i = 0; i < example.size(); ++i)
    grey[i] = static_cast<unsigned char>(std::lround((example[i] - norm.shift[0]) / norm.scale[0]));
  EXPECT_NE(stbi_write_png(file.c_str(), 28, 28, 1, grey.data(), 28), 0);
  return file;
}

TEST(Predict, AnMnistDigitWrittenAsAPngIsReadBackAsTheSameExample) {
  const auto mnist = load_mnist(testing::shared_data_dir() / "mnist", MnistSplit::test, "MNIST");
  testing::TempDir dir;
  const ImageFileView view = image_file_view("mnist", {1, 28, 28});
  for (std::int64_t index : {0, 7, 4321}) {
    const fs::path png = write_png(*mnist, index, mnist_normalisation("MNIST"), dir.path() / "digit.png");
    std::vector<float> want(28 * 28), got(28 * 28);
    mnist->get(index, want.data());
    view(png, got.data());
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << "example " << index << " pixel " << i;
  }
}

TEST(Predict, AnImagenetJpegIsReadAsItsTestViewCropsIt) {
  const fs::path root = testing::shared_data_dir() / "imagenette-mini";
  if (!fs::exists(root)) GTEST_SKIP() << "no " << root;
  const auto val = std::dynamic_pointer_cast<const ImageFolderDataset>(load_data("imagenet", root, {3, 128, 128}).test);
  ASSERT_NE(val, nullptr);
  const ImageFileView view = image_file_view("imagenet", {3, 128, 128});
  std::vector<float> want(3 * 128 * 128), got(want.size());
  val->get(3, want.data());
  view(val->files()[3].path, got.data());
  EXPECT_EQ(got, want);
}

TEST(Predict, ATrainedNetworksTopClassesWithTheDataSetsNames) {
  testing::TempDir dir;
  TrainOptions o;
  o.model = "lenet";
  o.data = "fashion-mnist";
  o.data_dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(o.data_dir)) GTEST_SKIP() << "no " << o.data_dir << " (Debian's dataset-fashion-mnist)";
  o.epochs = 1;
  o.batch_size = 64;
  o.train_limit = 2048;
  o.test_limit = 100;
  o.tune = "off";
  o.quiet = true;
  o.checkpoint_dir = dir.path() / "ckpt";
  std::ostringstream log;
  ASSERT_EQ(train(o, log).status, TrainStatus::completed);
  const auto test = load_mnist(o.data_dir, MnistSplit::test, "Fashion-MNIST");
  const fs::path png = write_png(*test, 0, mnist_normalisation("Fashion-MNIST"), dir.path() / "item.png");
  const std::string ckpt = o.checkpoint_dir.string(), image = png.string();
  std::vector<const char*> argv = {"predict", "--checkpoint", ckpt.c_str(), "--tune", "off", image.c_str(), image.c_str()};
  CommandLine cli = predict_command_line();
  ASSERT_TRUE(cli.parse(static_cast<int>(argv.size()), argv.data()));
  std::ostringstream out;
  const std::vector<Prediction> p = run_predict(cli, out);
  ASSERT_EQ(p.size(), 2u);
  ASSERT_EQ(p[0].top.size(), 5u);
  const std::vector<std::string> names = test->class_names();
  double sum = 0;
  for (std::size_t i = 0; i < p[0].top.size(); ++i) {
    EXPECT_NE(std::find(names.begin(), names.end(), p[0].top[i].first), names.end()) << p[0].top[i].first;
    if (i > 0) {
      EXPECT_LE(p[0].top[i].second, p[0].top[i - 1].second);
    }
    sum += p[0].top[i].second;
  }
  EXPECT_LE(sum, 1.0 + 1e-9);
  EXPECT_EQ(p[1].top, p[0].top) << "the same image twice";
  EXPECT_NE(out.str().find("%  " + p[0].top[0].first), std::string::npos) << out.str();
}

// predict plans through the system tuning cache below the user's, as train does: what one run
// profiled into a file installed as the system cache is not profiled again, and a fresh user
// cache stays unwritten (system entries date nothing).
TEST(Predict, PlansFromTheSystemTuningCacheBelowTheUsersAsTrainDoes) {
  testing::TempDir dir;
  TrainOptions o;
  o.model = "lenet";
  o.data = "fashion-mnist";
  o.data_dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(o.data_dir)) GTEST_SKIP() << "no " << o.data_dir << " (Debian's dataset-fashion-mnist)";
  o.epochs = 1;
  o.train_limit = 128;
  o.test_limit = 64;
  o.quiet = true;
  o.checkpoint_dir = dir.path() / "ckpt";
  std::ostringstream log;
  ASSERT_EQ(train(o, log).status, TrainStatus::completed);
  const auto test = load_mnist(o.data_dir, MnistSplit::test, "Fashion-MNIST");
  const std::string image = write_png(*test, 0, mnist_normalisation("Fashion-MNIST"), dir.path() / "item.png").string();
  const std::string ckpt = o.checkpoint_dir.string(), site = (dir.path() / "site.yaml").string(),
                    user = (dir.path() / "user.yaml").string();
  const auto predict_with = [&](const std::string& cache) {
    std::vector<const char*> argv = {"predict", "--checkpoint", ckpt.c_str(), "--tune", "cached", "--tune-cache",
                                     cache.c_str(), image.c_str()};
    CommandLine cli = predict_command_line();
    EXPECT_TRUE(cli.parse(static_cast<int>(argv.size()), argv.data()));
    std::ostringstream out;
    return run_predict(cli, out);
  };
  const std::vector<Prediction> profiled = predict_with(site);
  ASSERT_TRUE(fs::exists(site)) << "the first run profiles the batch-1 shapes into its cache";
  testing::ScopedEnv installed("TUNECNN_SYSTEM_TUNE_CACHE", site.c_str());
  const std::vector<Prediction> planned = predict_with(user);
  EXPECT_FALSE(fs::exists(user)) << "nothing profiled, nothing dated: the system cache had it all";
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_EQ(planned[0].top, profiled[0].top);
}

TEST(Predict, BadImagesAndCommandLinesAreNamed) {
  testing::TempDir dir;
  const fs::path text = dir.path() / "notes.png";
  std::ofstream(text) << "not an image";
  const ImageFileView view = image_file_view("mnist", {1, 28, 28});
  std::vector<float> out(28 * 28);
  testing::expect_error([&] { view(text, out.data()); }, {text.string()});
  testing::expect_error([&] { image_file_view("synthetic", {1, 28, 28}); }, {"synthetic", "no image files"});
  CommandLine cli = predict_command_line();
  const std::array<const char*, 3> argv = {"predict", "--checkpoint", "ckpt"};
  ASSERT_TRUE(cli.parse(static_cast<int>(argv.size()), argv.data()));
  std::ostringstream said;
  EXPECT_THROW(run_predict(cli, said), UsageError);
}

}  // namespace
}  // namespace tunecnn
