// The `train` command line, apart from main() so the fuzz target (fuzz/fuzz_cli.cpp) and the
// tests parse exactly what the program parses, without training.
#include "apps/training/train_command_line.h"

#include <sstream>
#include <string>

#include "apps/training/data_sources.h"
#include "autotune/tuned_planner.h"
#include "core/cuda_runtime.h"
#include "core/error.h"
#include "models/registry.h"
#include "ops/conv/registry.h"

namespace tunecnn {
namespace {

// "lenet 0.02, cifar 0.02, ...": one training default of every model, for --help.
std::string defaults_text(double TrainingDefaults::*field) {
  std::string text;
  for (const std::string& name : model_names()) {
    std::ostringstream value;
    value << training_defaults(name).*field;
    text += (text.empty() ? "" : ", ") + name + " " + value.str();
  }
  return text;
}

TrainOptions options_from(const CommandLine& cli) {
  TrainOptions o;
  o.model = cli.get("model");
  o.data = cli.get("data");
  o.data_dir = cli.get("data-dir");
  o.val_labels = cli.get("val-labels");
  o.epochs = cli.get_int("epochs");
  o.batch_size = cli.get_int("batch-size");
  if (cli.has("lr")) o.lr = cli.get_double("lr");
  o.schedule = cli.get("schedule");
  o.step_epochs = cli.get_double("step-epochs");
  o.gamma = cli.get_double("gamma");
  if (cli.has("warmup-epochs")) o.warmup_epochs = cli.get_double("warmup-epochs");
  o.momentum = cli.get_double("momentum");
  o.weight_decay = cli.get_double("weight-decay");
  o.nesterov = cli.has("nesterov");
  o.seed = static_cast<std::uint64_t>(cli.get_int("seed"));
  o.threads = cli.get_int("threads");
  o.allocator_cache = allocator_cache_option(cli);
  o.recompute_activations = cli.has("recompute-activations");
  if (cli.has("memory-budget")) {
    const std::optional<std::size_t> bytes = parse_memory_size(cli.get("memory-budget"));
    TUNECNN_CHECK(bytes && *bytes > 0, "--memory-budget must be a size such as 2G, 512M or 1048576, got '",
                  cli.get("memory-budget"), "'");
    o.memory_budget = *bytes;
  }
  o.device = parse_device(cli.get("device"));
  o.checkpoint_dir = cli.get("checkpoint-dir");
  o.checkpoint_every = cli.get_int("checkpoint-every");
  o.resume = cli.has("resume");
  o.overwrite = cli.has("overwrite");
  o.log_csv = cli.get("log");
  o.export_onnx = cli.get("export");
  o.init_from = cli.get("init-from");
  o.freeze_until = cli.get("freeze-until");
  o.train_limit = cli.get_int("train-limit");
  o.test_limit = cli.get_int("test-limit");
  o.tune = cli.get("tune");
  parse_tune_policy(o.tune);  // a typo fails here, before any data is loaded
  o.force_solvers = split_commas(cli.get("force-solver"));
  // A build without CUDA has no GPU solvers to name: the trainer's device check then says why.
  const bool solvers_known = o.device == Device::cpu || cuda_built();
  for (const std::string& name : solvers_known ? o.force_solvers : std::vector<std::string>{})
    TUNECNN_CHECK(find_conv_solver(name, o.device) != nullptr, "--force-solver: unknown ",
                  to_string(o.device), " conv solver '", name, "'; known: ",
                  conv_solver_names(o.device));
  o.tune_cache = cli.get("tune-cache");
  if (cli.has("tune-budget")) {
    o.tune_budget = cli.get_double("tune-budget");
    TUNECNN_CHECK(o.tune_budget > 0, "--tune-budget must be a positive number of seconds, got ", cli.get("tune-budget"));
  }
  if (cli.has("max-workspace")) {
    const std::optional<std::size_t> bytes = parse_byte_count(cli.get("max-workspace"));
    TUNECNN_CHECK(bytes.has_value(), "--max-workspace must be a number of bytes, got '",
                  cli.get("max-workspace"), "'");
    o.max_workspace = *bytes;
  }
  TUNECNN_CHECK(cli.get_int("allreduce-bucket-kb") > 0, "--allreduce-bucket-kb must be positive, got ",
                cli.get_int("allreduce-bucket-kb"));
  o.allreduce_bucket_bytes = static_cast<std::size_t>(cli.get_int("allreduce-bucket-kb")) * 1024;
  TUNECNN_CHECK(o.epochs > 0, "--epochs must be positive, got ", o.epochs);
  TUNECNN_CHECK(o.batch_size > 0, "--batch-size must be positive, got ", o.batch_size);
  return o;
}

}  // namespace

CommandLine train_command_line() {
  std::string models;
  for (const std::string& name : model_names()) models += (models.empty() ? "" : ", ") + name;
  CommandLine cli("train", "Trains a convolutional network with SGD and reports test accuracy "
                                    "after every epoch.\nCtrl-C (or SIGTERM) saves a checkpoint (with --checkpoint-dir) "
                                    "and stops; --resume continues from it.\nData-parallel: mpirun -np P "
                                    "train ... runs P processes on one global batch of --batch-size "
                                    "examples (each process a 1/P share); rank 0 tunes, prints and "
                                    "writes checkpoints." + std::string(mpi_built() ? "" :
                                    " (This build has no MPI: install libopenmpi-dev and rebuild.)") +
                                    "\nExit status: 0 trained, 1 error, 2 bad command line, 3 the loss "
                                    "diverged (NaN), 130 stopped by Ctrl-C.");
  cli.option("model", "lenet", "model to train: " + models + " (mobilenet-W-R: width W 1.0, "
                               "0.75, 0.5 or 0.25, resolution R 224, 192, 160 or 128, e.g. "
                               "mobilenet-0.5-128), or an ONNX file NAME.onnx: its network with "
                               "its weights (README, Networks from ONNX files)");
  cli.option("data", "fashion-mnist", "data set: " + data_set_names() + ". cifar10 "
                                      "and imagenet are served as random crops of the model's "
                                      "input side with flips for training, centre crops for "
                                      "testing; synthetic is made-up images of the model's shape");
  cli.option("data-dir", "", "where the data set is (default for fashion-mnist: "
                             "/usr/share/datasets/fashion-mnist). mnist: the idx files' folder; "
                             "cifar10: cifar-10-binary.tar.gz or its cifar-10-batches-bin folder; "
                             "imagenet: a folder holding train/ and val/, each with one folder of "
                             "images per class (or a flat val/ and DIR/val_labels.txt)");
  cli.option("val-labels", "", "with --data imagenet and a flat DIR/val/ of images: the file of "
                               "'filename wnid' or 'filename class-index' lines (default: "
                               "DIR/val_labels.txt)");
  cli.option("epochs", "2", "number of epochs");
  cli.option("batch-size", "64", "examples per step (under mpirun: over all processes together)");
  cli.option("lr", "", "initial learning rate (default: the model's, " + defaults_text(&TrainingDefaults::lr) + ")");
  cli.option("schedule", "cosine", "learning-rate schedule: const, step or cosine");
  cli.option("step-epochs", "1", "with --schedule step: epochs between decays");
  cli.option("gamma", "0.1", "with --schedule step: decay factor");
  cli.option("warmup-epochs", "", "ramp the learning rate up linearly over the first E epochs "
                                  "(fractions allowed), then follow --schedule; lets nets without "
                                  "normalisation such as cifar and alexnet take a larger --lr (default: "
                                  "the model's, " + defaults_text(&TrainingDefaults::warmup_epochs) + ")");
  cli.option("momentum", "0.9", "SGD momentum");
  cli.option("weight-decay", "5e-4", "L2 weight decay");
  cli.flag("nesterov", "use Nesterov momentum");
  cli.option("seed", "1", "seed for initialisation, shuffling and dropout");
  cli.option("device", "cpu", "where to train: cpu, or cuda (the first NVIDIA GPU; needs a build "
                             "with the CUDA backend)");
  add_allocator_cache_option(cli);
  add_recompute_activations_option(cli);
  cli.option("memory-budget", "",
             "the most a training step may hold at its peak (tensors, workspaces, layout copies; bytes, or "
             "with K, M or G): before the first step the planner predicts the peak and, while it is over, "
             "recomputes BatchNorm outputs and plans smaller conv workspaces; the allocator's cache is "
             "capped there too. With --device cuda, of the GPU's memory (our allocator's: not cuBLAS's or "
             "cuDNN's own)");
  cli.option("threads", "0", "CPU threads per process (0: all cores, shared among the processes "
                             "mpirun starts on this host)");
  cli.option("checkpoint-dir", "", "folder for checkpoints (last.ckpt, and previous.ckpt before it), written "
                                   "every epoch and on Ctrl-C; one holding an earlier run's needs --resume or --overwrite");
  cli.option("checkpoint-every", "0", "also checkpoint every N batches (0: only per epoch)");
  cli.flag("resume", "continue from the checkpoint in --checkpoint-dir (previous.ckpt when last.ckpt is corrupt)");
  cli.flag("overwrite", "start afresh although --checkpoint-dir holds an earlier run's checkpoint; "
                        "replace an existing --export file");
  cli.option("log", "", "CSV file with one row per epoch");
  cli.option("export", "", "at the end, write the trained network to this ONNX file (opset 13: for "
                           "ONNX runtimes, or --model FILE.onnx here); an existing file needs --overwrite");
  cli.option("init-from", "", "start from the weights of this checkpoint (a last.ckpt or its folder) or ONNX "
                              "file instead of random ones (fine-tuning); it must hold the same network, "
                              "but when its class count differs from the data's, the classifier starts "
                              "afresh (said at the start). Not read with --resume, whose checkpoint holds the weights");
  cli.option("freeze-until", "", "keep the weights of the model's layers up to and including this one (a "
                                 "name from the plan listing, e.g. conv2 or pw6) as they start, typically with "
                                 "--init-from: only the later layers train (batch norm's running statistics "
                                 "still follow the data)");
  cli.option("train-limit", "0", "train on the first N examples only (0: all)");
  cli.option("test-limit", "0", "evaluate on the first N test examples only (0: all)");
  cli.option("tune", "cached", "conv tuning: off (time nothing: cached entries, else the device "
                               "thresholds from `autotune calibrate`), cached (profile what the "
                               "cache lacks), verify (re-time the best few candidates another "
                               "device's entries name), full (profile everything)");
  cli.option("tune-cache", "", "tuning cache file (default: $TUNECNN_TUNE_CACHE, else "
                               "$XDG_CACHE_HOME/tunecnn/tuning.yaml, else ~/.cache/tunecnn/tuning.yaml); "
                               "read over the read-only system cache ($TUNECNN_SYSTEM_TUNE_CACHE, else "
                               "share/tunecnn/tuning.yaml beside the programs' folder, if there), which "
                               "is never written");
  cli.option("tune-budget", "", "seconds the tuner may spend profiling (default: no limit): the layers "
                                "with the most work are tuned first, the rest take the device thresholds "
                                "(as --tune off) and are tuned by a later run; the summary says how many");
  cli.option("max-workspace", "", "largest conv workspace a tuned candidate may use, in bytes "
                                  "(default: unlimited)");
  cli.option("force-solver", "", "comma-separated conv solvers to use wherever they run (e.g. "
                                  "mec or im2col_gemm,winograd_f2x3); other layers are tuned as usual; "
                                  "what a forced run measures is not written to the cache");
  cli.option("collective-timeout", "300", "under mpirun: seconds a process waits for the others in "
                                         "one step's communication before it stops the whole job "
                                         "(a rank died or hung); waiting for rank 0's tuning is "
                                         "allowed an hour");
  cli.option("allreduce-bucket-kb", "1024", "under mpirun: gradients are averaged in buckets of about "
                                           "this many KiB, each sent as soon as backward finishes it");
  return cli;
}

// options_from's checks are all about the command line: a failure is the user's to fix.
TrainOptions train_options(const CommandLine& cli) {
  try {
    return options_from(cli);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.message());
  }
}

}  // namespace tunecnn
