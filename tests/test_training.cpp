// End-to-end training on a slice of the real MNIST files: the loss falls, checkpoints round-trip,
// a resumed run equals an uninterrupted one, Ctrl-C and divergence stop cleanly.
#include <gtest/gtest.h>

#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/training/trainer.h"
#include "core/checkpoint.h"
#include "core/error.h"
#include "core/tensor_math.h"
#include "models/registry.h"
#include "tests/support/test_data.h"
#include "tests/support/train_options.h"

namespace tunecnn {
namespace {

TrainOptions mnist_options(std::int64_t train_limit = 2048) {
  TrainOptions o;
  o.model = "lenet";
  o.data = "mnist";
  o.data_dir = testing::shared_data_dir() / "mnist";
  o.epochs = 2;
  o.batch_size = 64;
  o.train_limit = train_limit;
  o.test_limit = 1000;
  o.quiet = true;
  return o;
}

using testing::synthetic_options;

std::string run_quiet(const TrainOptions& o, TrainResult* result = nullptr) {
  std::ostringstream out;
  TrainResult r = train(o, out);
  if (result) *result = r;
  return out.str();
}

TEST(Training, LossFallsAndAccuracyRisesOnRealMnist) {
  TrainResult r;
  run_quiet(mnist_options(), &r);
  ASSERT_EQ(r.status, TrainStatus::completed) << r.message;
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_LT(r.epochs[1].train_loss, r.epochs[0].train_loss);
  EXPECT_LT(r.epochs[0].train_loss, 2.0);  // below chance (ln 10 = 2.30)
  EXPECT_GT(r.epochs[1].test_acc, 0.85);   // 2048 training images are enough for this
  EXPECT_GE(r.epochs[1].test_acc, r.epochs[0].test_acc - 0.01);
}

TEST(Training, SyntheticDataNeedsNoFilesAndIsLearnable) {
  TrainOptions o = mnist_options();
  o.data = "synthetic";  // 1x28x28 like LeNet's input; the class patterns are learnable
  o.data_dir.clear();
  o.train_limit = 512;
  o.test_limit = 256;
  TrainResult r;
  run_quiet(o, &r);
  ASSERT_EQ(r.status, TrainStatus::completed) << r.message;
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_GT(r.epochs[1].test_acc, 0.5);  // chance is 0.1
  EXPECT_GE(r.epochs[1].test_top5, r.epochs[1].test_acc);
  EXPECT_LE(r.epochs[1].test_top5, 1.0);
}

TEST(Training, ModelAndDataShapesThatDoNotFitAreAnErrorBeforeTraining) {
  TrainOptions o = mnist_options();
  o.data = "cifar10";
  o.data_dir = testing::shared_data_dir() / "cifar-10-binary.tar.gz";
  try {
    run_quiet(o);
    FAIL() << "lenet on cifar10 should not start";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use --model cifar"), std::string::npos) << e.what();
  }
  o.data = "cifar10-typo";
  try {
    run_quiet(o);
    FAIL() << "an unknown data set should not start";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mnist, fashion-mnist, cifar10, imagenet or synthetic"),
              std::string::npos) << e.what();
  }
}

// ImageNet's own validation set is one flat folder with a separate labels file; train reads it
// through --val-labels (a file anywhere) and the training split's class folders.
TEST(Training, FlatValidationFolderWithALabelsFileTrainsEndToEnd) {
  namespace fs = std::filesystem;
  const fs::path source = testing::shared_data_dir() / "imagenette-mini";
  testing::TempDir dir;
  fs::copy(source / "train", dir.path() / "train", fs::copy_options::recursive);
  fs::create_directories(dir.path() / "val");
  std::ofstream labels(dir.path() / "labels.txt");
  for (const auto& wnid : fs::directory_iterator(source / "val"))
    for (const auto& image : fs::directory_iterator(wnid.path())) {
      fs::copy_file(image.path(), dir.path() / "val" / image.path().filename());
      labels << image.path().filename().string() << " " << wnid.path().filename().string() << "\n";
    }
  labels.close();

  TrainOptions o = mnist_options(16);
  o.model = "mobilenet-0.25-128";
  o.data = "imagenet";
  o.data_dir = dir.path();
  o.val_labels = dir.path() / "labels.txt";
  o.epochs = 1;
  o.batch_size = 8;
  o.test_limit = 0;
  TrainResult r;
  run_quiet(o, &r);
  ASSERT_EQ(r.status, TrainStatus::completed) << r.message;
  EXPECT_GE(r.epochs[0].test_top5, r.epochs[0].test_acc);

  o.val_labels = dir.path() / "missing.txt";
  try {
    run_quiet(o);
    FAIL() << "a missing labels file should stop the run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.txt"), std::string::npos) << e.what();
  }
  o.data = "cifar10";
  try {
    run_quiet(o);
    FAIL() << "--val-labels with cifar10 should be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--data imagenet only"), std::string::npos) << e.what();
  }
}

TEST(Training, InterruptedRunResumesExactly) {
  testing::TempDir straight_dir, split_dir;
  TrainOptions o = mnist_options(512);  // 8 batches per epoch
  o.checkpoint_dir = straight_dir.path();
  TrainResult full;
  run_quiet(o, &full);
  ASSERT_EQ(full.status, TrainStatus::completed) << full.message;

  // As if Ctrl-C came during batch 3 of epoch 2: the batch finishes, a checkpoint records it.
  o.checkpoint_dir = split_dir.path();
  o.on_batch_end = [](int epoch, std::int64_t batch) {
    if (epoch == 1 && batch == 3) stop_requested() = true;
  };
  TrainResult stopped;
  run_quiet(o, &stopped);
  stop_requested() = false;
  ASSERT_EQ(stopped.status, TrainStatus::interrupted);
  ASSERT_EQ(stopped.epochs.size(), 1u);
  const CheckpointData saved = load_checkpoint(checkpoint_path(split_dir.path()));
  EXPECT_EQ(saved.value("epoch"), "1");
  EXPECT_EQ(saved.value("next_batch"), "3");

  o.on_batch_end = nullptr;
  o.resume = true;
  TrainResult resumed;
  run_quiet(o, &resumed);
  ASSERT_EQ(resumed.status, TrainStatus::completed) << resumed.message;
  ASSERT_EQ(resumed.epochs.size(), 1u);
  EXPECT_EQ(resumed.epochs[0].epoch, 2);
  EXPECT_DOUBLE_EQ(resumed.epochs[0].train_loss, full.epochs[1].train_loss);
  EXPECT_DOUBLE_EQ(resumed.epochs[0].test_acc, full.epochs[1].test_acc);

  const CheckpointData a = load_checkpoint(checkpoint_path(straight_dir.path()));
  const CheckpointData b = load_checkpoint(checkpoint_path(split_dir.path()));
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i)
    EXPECT_EQ(max_abs_diff(a.tensors[i].second, b.tensors[i].second), 0.0) << a.tensors[i].first;
}

TEST(Training, CheckpointEveryNBatches) {
  testing::TempDir dir;
  TrainOptions o = mnist_options(512);
  o.epochs = 1;
  o.checkpoint_dir = dir.path();
  o.checkpoint_every = 3;
  std::string seen;
  o.on_batch_end = [&](int, std::int64_t batch) {
    if (batch == 4) seen = load_checkpoint(checkpoint_path(dir.path())).value("next_batch");
  };
  run_quiet(o);
  EXPECT_EQ(seen, "3");
}

TEST(Training, DivergenceStopsAndKeepsTheLastGoodCheckpoint) {
  testing::TempDir dir;
  TrainOptions o = mnist_options(256);
  o.epochs = 1;
  o.checkpoint_dir = dir.path();
  run_quiet(o);
  const auto path = checkpoint_path(dir.path());
  const auto good = std::filesystem::last_write_time(path);
  o.epochs = 2;
  o.resume = true;
  o.lr = 1e12;
  TrainResult r;
  run_quiet(o, &r);
  EXPECT_EQ(r.status, TrainStatus::diverged);
  EXPECT_NE(r.message.find("NaN"), std::string::npos) << r.message;
  EXPECT_EQ(std::filesystem::last_write_time(path), good);
  EXPECT_NO_THROW(load_checkpoint(path));
}

TEST(Training, ResumeRefusesAnotherConfiguration) {
  testing::TempDir dir;
  TrainOptions o = mnist_options(128);
  o.epochs = 1;
  o.checkpoint_dir = dir.path();
  run_quiet(o);
  o.resume = true;
  o.epochs = 2;
  o.batch_size = 32;
  try {
    run_quiet(o);
    FAIL() << "resuming with another batch size must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--batch-size"), std::string::npos) << e.what();
  }
}

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The error a run throws, or "" when it throws none.
std::string error_of(const TrainOptions& o) {
  try {
    run_quiet(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Training, AnEarlierRunsCheckpointIsNeitherOverwrittenNorIgnoredUnlessAsked) {
  testing::TempDir dir;
  TrainOptions o = mnist_options(128);
  o.epochs = 1;
  o.checkpoint_dir = dir.path();
  run_quiet(o);
  const auto path = checkpoint_path(dir.path());
  const std::string earlier = file_bytes(path);

  o.on_batch_end = [](int, std::int64_t) { FAIL() << "refused runs must stop before training"; };
  const std::string refused = error_of(o);
  for (const char* part : {"holds an earlier run's checkpoint (--model lenet, 1 epochs done)", "--resume",
                           "--overwrite", "last.ckpt"})
    EXPECT_NE(refused.find(part), std::string::npos) << part << " missing in: " << refused;
  EXPECT_EQ(file_bytes(path), earlier);

  o.on_batch_end = nullptr;
  o.overwrite = true;
  o.seed = 2;
  EXPECT_EQ(error_of(o), "");
  EXPECT_EQ(load_checkpoint(path).value("seed"), "2");
}

TEST(Training, ACheckpointFolderThatCannotBeOneFailsBeforeTraining) {
  testing::TempDir dir;
  const auto file = dir.path() / "not-a-folder";
  std::ofstream(file) << "a user's file";
  TrainOptions o = mnist_options(128);
  o.epochs = 1;
  o.on_batch_end = [](int, std::int64_t) { FAIL() << "must stop before training"; };
  o.checkpoint_dir = file;
  EXPECT_NE(error_of(o).find("is a file, not a folder"), std::string::npos) << error_of(o);
  EXPECT_EQ(file_bytes(file), "a user's file");
  o.checkpoint_dir = file / "sub";
  EXPECT_NE(error_of(o).find("cannot create it"), std::string::npos) << error_of(o);
}

TEST(Training, ADataDirThatIsAFileOrMissingIsToldApart) {
  testing::TempDir dir;
  const auto file = dir.path() / "train-images-idx3-ubyte.gz";
  std::ofstream(file) << "x";
  TrainOptions o = mnist_options(128);
  o.data_dir = file;
  EXPECT_NE(error_of(o).find(file.string() + " is a file, not a folder: --data mnist reads the folder"),
            std::string::npos) << error_of(o);
  o.data = "imagenet";
  o.model = "mobilenet-0.25-128";
  EXPECT_NE(error_of(o).find(file.string() + " is a file, not a folder: --data imagenet"), std::string::npos)
      << error_of(o);
  o.data_dir = dir.path() / "missing";
  EXPECT_NE(error_of(o).find((dir.path() / "missing").string() + " does not exist"), std::string::npos)
      << error_of(o);
}

TEST(Training, ResumeFallsBackToThePreviousCheckpointWhenTheLastIsCorrupt) {
  testing::TempDir dir;
  TrainOptions o = mnist_options(128);
  o.checkpoint_dir = dir.path();
  TrainResult full;
  run_quiet(o, &full);
  ASSERT_EQ(full.status, TrainStatus::completed) << full.message;
  EXPECT_EQ(load_checkpoint(previous_checkpoint_path(dir.path())).value("epoch"), "1");
  EXPECT_EQ(load_checkpoint(checkpoint_path(dir.path())).value("epoch"), "2");

  std::string damaged = file_bytes(checkpoint_path(dir.path()));
  damaged[damaged.size() / 2] ^= 0x5a;
  std::ofstream(checkpoint_path(dir.path()), std::ios::binary | std::ios::trunc) << damaged;
  o.resume = true;
  o.quiet = false;
  TrainResult resumed;
  const std::string out = run_quiet(o, &resumed);
  ASSERT_EQ(resumed.status, TrainStatus::completed) << resumed.message;
  EXPECT_NE(out.find("CRC mismatch"), std::string::npos) << out;
  EXPECT_NE(out.find("resuming from the checkpoint before it, " + previous_checkpoint_path(dir.path()).string()),
            std::string::npos) << out;
  ASSERT_EQ(resumed.epochs.size(), 1u);  // epoch 2 again, from epoch 1's state: the same result
  EXPECT_EQ(resumed.epochs[0].epoch, 2);
  EXPECT_DOUBLE_EQ(resumed.epochs[0].train_loss, full.epochs[1].train_loss);
  // The damaged file was replaced, not kept as the previous checkpoint.
  EXPECT_EQ(load_checkpoint(previous_checkpoint_path(dir.path())).value("epoch"), "1");
  EXPECT_EQ(load_checkpoint(checkpoint_path(dir.path())).value("epoch"), "2");

  std::filesystem::remove(checkpoint_path(dir.path()));
  std::filesystem::remove(previous_checkpoint_path(dir.path()));
  EXPECT_NE(error_of(o).find("--resume: no checkpoint in"), std::string::npos) << error_of(o);
}

// A rate so low that nothing moves: the run says so once, past the first 300 steps, and what to
// try; a run that learns hears nothing.
TEST(Training, ARunStuckAtChanceIsToldSo) {
  TrainOptions o = mnist_options(64 * 320);
  o.epochs = 1;
  o.test_limit = 64;
  o.quiet = false;
  o.lr = 1e-9;
  const std::string stuck = run_quiet(o);
  EXPECT_NE(stuck.find("warning: after 300 steps the training loss is still at or above chance"), std::string::npos) << stuck;
  EXPECT_NE(stuck.find("guessing scores ln 10 = 2.30"), std::string::npos) << stuck;
  EXPECT_EQ(stuck.find("warning: after", stuck.find("warning: after") + 1), std::string::npos) << "once";
  o.lr.reset();
  const std::string learning = run_quiet(o);
  EXPECT_EQ(learning.find("above chance"), std::string::npos) << learning;
}

TEST(Training, EachModelTrainsWithItsOwnDefaultsUnlessTold) {
  EXPECT_EQ(training_defaults("lenet").lr, 0.02);
  EXPECT_EQ(training_defaults("cifar").warmup_epochs, 1);
  EXPECT_EQ(training_defaults("alexnet").lr, 0.005);
  EXPECT_EQ(training_defaults("mobilenet-0.25-128").lr, 0.02);
  TrainOptions o = synthetic_options("cifar", 64, 64);
  const std::string defaults = run_quiet(o);
  EXPECT_NE(defaults.find("linear warmup over 1.0"), std::string::npos) << defaults;
  EXPECT_NE(defaults.find("defaults for --model cifar: --lr 0.02 --warmup-epochs 1, since it has no "
                          "normalisation layers"), std::string::npos) << defaults;
  o.lr = 0.01;
  o.warmup_epochs = 0;
  const std::string told = run_quiet(o);
  EXPECT_NE(told.find("SGD lr 0.01 "), std::string::npos) << told;
  EXPECT_EQ(told.find("defaults for --model"), std::string::npos) << told;
}

// MobileNet's BatchNorm outputs released after forward and rebuilt in backward: the same run.
TEST(Training, RecomputedActivationsTrainExactlyAsKeptOnes) {
  TrainOptions o = synthetic_options("mobilenet-0.25-128", 32, 16);
  o.batch_size = 8;
  TrainResult kept, recomputed;
  run_quiet(o, &kept);
  o.recompute_activations = true;
  run_quiet(o, &recomputed);
  EXPECT_TRUE(recompute_activations()) << "the run did not turn recomputing on";
  set_recompute_activations(false);
  ASSERT_EQ(kept.status, TrainStatus::completed) << kept.message;
  ASSERT_EQ(recomputed.status, TrainStatus::completed) << recomputed.message;
  EXPECT_EQ(recomputed.epochs[0].train_loss, kept.epochs[0].train_loss);
  EXPECT_EQ(recomputed.epochs[0].test_loss, kept.epochs[0].test_loss);
}

TEST(Training, CsvLogHasHeaderAndOneRowPerEpoch) {
  testing::TempDir dir;
  TrainOptions o = mnist_options(256);
  o.log_csv = dir.path() / "log.csv";
  run_quiet(o);
  std::ifstream in(o.log_csv);
  std::string header, row1, row2, extra;
  std::getline(in, header), std::getline(in, row1), std::getline(in, row2);
  EXPECT_EQ(header.rfind("epoch,train_loss,train_acc,test_loss,test_acc,test_top5,images_per_s,seconds", 0), 0u);
  EXPECT_EQ(row1.rfind("1,", 0), 0u);
  EXPECT_EQ(row2.rfind("2,", 0), 0u);
  EXPECT_FALSE(std::getline(in, extra));
}

TEST(Checkpoint, RoundTripAndCorruptionIsReported) {
  testing::TempDir dir;
  CheckpointData data;
  data.meta["epoch"] = "3";
  data.tensors.emplace_back("w", Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}));
  data.tensors.emplace_back("v", Tensor::from_vector(std::vector<double>{5, 6}, {2}));
  const auto path = dir.path() / "c.ckpt";
  save_checkpoint(path, data);
  const CheckpointData back = load_checkpoint(path);
  EXPECT_EQ(back.value("epoch"), "3");
  EXPECT_EQ(max_abs_diff(back.tensor("w"), data.tensor("w")), 0.0);
  EXPECT_EQ(back.tensor("v").dtype(), DType::f64);
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp." + std::to_string(::getpid())));

  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto expect_error = [&](const std::string& content, const std::string& word) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    try {
      load_checkpoint(path);
      FAIL() << "expected an error mentioning " << word;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x5a;
  expect_error(flipped, "CRC");
  expect_error(bytes.substr(0, bytes.size() / 2), "corrupt");
  expect_error("not a checkpoint at all", "magic");
}

// Found by fuzz/fuzz_checkpoint (fuzz/regressions/checkpoint/): dimensions that each pass the
// per-dimension bound but whose product overflows gave a wrapped size of 0 bytes, so a file
// holding no data loaded as a tensor claiming 2^64 elements.
TEST(Checkpoint, DimensionsWhoseProductOverflowsAreReported) {
  testing::TempDir dir;
  const auto path = dir.path() / "c.ckpt";
  CheckpointData data;
  data.tensors.emplace_back("w", Tensor::zeros({0, 0}));
  save_checkpoint(path, data);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // magic 8, version 4, meta count 8, tensor count 8, name 4 + 1, dtype 1, layout 1, ndim 4.
  constexpr std::size_t kFirstDim = 8 + 4 + 8 + 8 + 5 + 1 + 1 + 4;
  ASSERT_EQ(bytes.size(), kFirstDim + 2 * 8 + 4);
  const std::int64_t two_to_32 = std::int64_t{1} << 32;  // 2^32 * 2^32 wraps to 0
  std::memcpy(bytes.data() + kFirstDim, &two_to_32, 8);
  std::memcpy(bytes.data() + kFirstDim + 8, &two_to_32, 8);
  const auto crc = static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size() - 4)));
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  try {
    load_checkpoint(path);
    FAIL() << "a tensor of shape [4294967296, 4294967296] loaded from a file with no data";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shape [4294967296, 4294967296]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tunecnn
