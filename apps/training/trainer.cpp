#include "apps/training/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <deque>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "apps/common/device_check.h"
#include "apps/training/classification_metrics.h"
#include "apps/training/csv_log.h"
#include "apps/training/data_parallel.h"
#include "apps/training/data_sources.h"
#include "apps/training/initial_weights.h"
#include "apps/training/memory_budget.h"
#include "apps/training/model_export.h"
#include "apps/training/progress.h"
#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "core/checkpoint.h"
#include "core/gradient_allreduce.h"
#include "autotune/device_clock.h"
#include "core/cuda_runtime.h"
#include "core/lr_schedule.h"
#include "core/pinned_upload.h"
#include "core/sgd.h"
#include "core/threading.h"
#include "datasets/data_loader.h"
#include "datasets/subset_dataset.h"
#include "models/registry.h"
#include "ops/conv/conv2d.h"
#include "ops/pool/pool2d.h"
#include "ops/softmax/plan.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn {
namespace {

using Clock = std::chrono::steady_clock;

// Round-trips exactly, unlike std::to_string's six decimals.
std::string exact(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// SIGTERM too: mpirun answers Ctrl-C by sending SIGTERM to every rank (then SIGKILL a little
// later), and batch schedulers end jobs with it; the ranks agree on the stop at the next step and
// rank 0 writes the checkpoint.
extern "C" void on_stop_signal(int signal) {
  stop_requested().store(true);
  std::signal(signal, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// Running sums of one epoch; saved in mid-epoch checkpoints so a resumed epoch reports the same.
struct EpochSums {
  double loss = 0, seconds = 0;
  std::int64_t correct = 0, seen = 0;
};

// The loss as a number on the host, wherever it was computed.
double scalar_value(const Variable& loss) { return loss.data().to(Device::cpu).data<float>()[0]; }

// The sums one training step adds, over every rank: reduced before backward, so that a loss
// that is not finite on any rank, or a Ctrl-C on any rank, stops all of them at the same step.
struct StepSums {
  double loss = 0, correct = 0, examples = 0, not_finite = 0, stop = 0;
};

std::shared_ptr<Communicator> communicator_of(const TrainOptions& options) {
  return options.comm ? options.comm : std::make_shared<SingleProcess>();
}

class Run {
 public:
  Run(const TrainOptions& options, std::ostream& out)
      : o_(options),
        out_(out),
        dp_(communicator_of(options)),
        talk_(!options.quiet && dp_.comm().is_root()),
        rng_(options.seed),
        // Rank 0 draws dropout as a single process does; each other rank has its own stream.
        dropout_rng_(std::make_shared<Rng>(options.seed + 1 +
                                           0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(dp_.comm().rank()))),
        defaults_(training_defaults(options.model)),
        lr_(options.lr.value_or(defaults_.lr)),
        warmup_epochs_(options.warmup_epochs.value_or(defaults_.warmup_epochs)) {}
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  TrainResult execute();

 private:
  const TrainOptions& o_;
  std::ostream& out_;
  DataParallel dp_;
  bool talk_;  // prints progress and results: rank 0 unless quiet
  Rng rng_;
  std::shared_ptr<Rng> dropout_rng_;
  DataSplits data_;
  std::shared_ptr<Sequential> model_;
  std::unique_ptr<Sgd> sgd_;
  std::unique_ptr<LrSchedule> schedule_;
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<GradientAllreduce> allreduce_;  // only with more than one rank
  std::unique_ptr<PinnedUploader> uploader_;      // only on the GPU
  int epoch_ = 0;               // 0-based epoch in progress
  std::int64_t next_batch_ = 0;
  EpochSums sums_;
  bool resumed_from_previous_ = false;  // last.ckpt was unreadable: the next save replaces it
  TrainingDefaults defaults_;  // the model's
  double lr_, warmup_epochs_;  // the options', else defaults_
  // The learning check (check_learning): the last steps' mean losses, and whether it was made.
  std::deque<double> recent_losses_;
  std::int64_t steps_run_ = 0;
  bool learning_checked_ = false;
  // Time this run's part of the epoch spent waiting for the loader: not in checkpoints, since a
  // resumed epoch waits differently; it tells whether decoding keeps up with the steps.
  double data_wait_seconds_ = 0;
  std::shared_ptr<TunedPlanner> tuner_;
  std::optional<InitialWeights> initial_weights_;  // --init-from's, read before the data
  std::string initial_weights_note_;               // what loading them left out, for the user
  std::string frozen_note_;                        // --freeze-until's layers, for the user
  Planners planners_;  // the tuner's, under --tune; the untuned defaults otherwise
  std::optional<MemoryBudgetFit> memory_fit_;  // under --memory-budget

  void setup();
  void check_device() const;
  void check_checkpoint_dir() const;
  CheckpointData load_resume_checkpoint(std::filesystem::path& path) const;
  Variable input_of(const Batch& batch);
  void create_tuner();
  std::vector<NamedVariable> trained_parameters();
  void prepare_plans();
  void fit_memory_budget();
  void resume();
  void save(const std::string& why);
  TrainStatus train_epoch(Progress& progress);
  void check_learning(double step_mean_loss, double epoch_position);
  void wait_for_device();
  EpochMetrics evaluate_epoch();
  std::string top5_text(const EpochMetrics& metrics) const;
  std::string skipped_text() const;
  std::string data_wait_text(const EpochMetrics& metrics) const;
  void print_plans(const Tensor& logits);
  std::string plan_text() const;
  StepSums reduce_step(StepSums sums);
  std::string allreduce_text() const;
  std::string memory_text() const;
};

// Before the data loads: a GPU run on a machine without one fails at once, saying why in the words
// bench and autotune use; and the GPU is not yet supported under mpirun.
void Run::check_device() const {
  require_device(o_.device);
  TUNECNN_CHECK(o_.device == Device::cpu || !dp_.active(), "--device cuda under mpirun is not "
                "supported yet: data-parallel training runs on CPUs only (train one process per GPU "
                "without mpirun)");
}

// Before the data loads: the checkpoint folder is a folder we can write, and a checkpoint an
// earlier run left there (possibly after days of training) is continued or replaced only when
// asked. Rank 0 writes the checkpoints, so rank 0 checks.
void Run::check_checkpoint_dir() const {
  namespace fs = std::filesystem;
  const fs::path& dir = o_.checkpoint_dir;
  if (dir.empty() || !dp_.comm().is_root()) return;
  TUNECNN_CHECK(!fs::exists(dir) || fs::is_directory(dir), "--checkpoint-dir ", dir.string(),
                " is a file, not a folder: name a folder (it is created when missing)");
  std::error_code error;
  fs::create_directories(dir, error);
  TUNECNN_CHECK(!error, "--checkpoint-dir ", dir.string(), ": cannot create it: ", error.message());
  const fs::path probe = dir / ".tunecnn-write-test";
  TUNECNN_CHECK(std::ofstream(probe).good(), "--checkpoint-dir ", dir.string(),
                " is not writable: checkpoints could not be saved there");
  fs::remove(probe, error);
  if (o_.resume || o_.overwrite || !fs::exists(checkpoint_path(dir))) return;
  std::string what = "an earlier run's checkpoint";
  try {
    const CheckpointData earlier = load_checkpoint(checkpoint_path(dir));
    what += " (--model " + printable(earlier.value("model")) + ", " + printable(earlier.value("epoch")) + " epochs done)";
  } catch (const Error&) {
    what += " (unreadable)";
  }
  TUNECNN_FAIL("--checkpoint-dir ", dir.string(), " holds ", what, " in ", checkpoint_path(dir).string(),
               ": continue it with --resume, start afresh with --overwrite (it is replaced at the "
               "first save), or name another folder");
}

// The batch where the model is: uploaded through the pinned buffers on the GPU.
Variable Run::input_of(const Batch& batch) {
  if (!uploader_) return Variable(batch.images);
  return Variable(uploader_->upload(batch.images));
}

void Run::setup() {
  check_device();
  check_checkpoint_dir();
  if (!o_.export_onnx.empty() && dp_.comm().is_root()) check_export_target(o_.export_onnx, o_.overwrite, "--export", "--overwrite");
  if (!o_.init_from.empty() && !o_.resume) initial_weights_ = read_initial_weights(o_.init_from);
  set_num_threads(dp_.threads_per_rank(o_.threads));
  // Before create_tuner: the other ranks wait there in a broadcast that rank 0 joins much later.
  const std::string ranks = dp_.active() ? dp_.where_ranks_run() : "";
  allocator_for(Device::cpu).set_cache_policy(o_.allocator_cache);
  set_recompute_activations(o_.recompute_activations);
  // Images are cropped to the model's side (mobilenet-0.5-128: 128, alexnet: 227, cifar: 24);
  // an unknown model fails here, before the data loads.
  const Shape model_input = model_input_shape(o_.model);
  data_ = load_data(o_.data, o_.data_dir, model_input, o_.val_labels);
  if (o_.train_limit > 0) data_.train = std::make_shared<SubsetDataset>(data_.train, o_.train_limit);
  if (o_.test_limit > 0) data_.test = std::make_shared<SubsetDataset>(data_.test, o_.test_limit);
  create_tuner();
  const ModelOptions model_options{.input_shape = data_.train->example_shape(),
                                   .num_classes = data_.train->num_classes(),
                                   .dropout_rng = dropout_rng_,
                                   .planners = planners_};
  model_ = build_model(o_.model, model_options, rng_);
  if (initial_weights_) initial_weights_note_ = load_initial_weights(*model_, *initial_weights_);
  if (o_.device != Device::cpu) {
    model_->to(o_.device);  // initialised on the host, so a GPU run starts from the CPU's weights
    uploader_ = std::make_unique<PinnedUploader>();
  }
  sgd_ = std::make_unique<Sgd>(trained_parameters(), SgdOptions{lr_, o_.momentum, o_.weight_decay, o_.nesterov});
  schedule_ = make_lr_schedule(o_.schedule, lr_, o_.epochs, o_.step_epochs, o_.gamma, warmup_epochs_);
  loader_ = std::make_unique<DataLoader>(
      data_.train, DataLoaderOptions{.batch_size = o_.batch_size,
                                     .shuffle = true,
                                     .seed = o_.seed,
                                     .augment = true,
                                     .shard_rank = dp_.comm().rank(),
                                     .shard_count = dp_.comm().size()});
  if (dp_.active())
    allreduce_ = std::make_unique<GradientAllreduce>(model_->parameters(), dp_.comm_ptr(),
                                                     o_.allreduce_bucket_bytes);
  if (!talk_) return;
  out_ << "tunecnn " << TUNECNN_VERSION << ": " << cpu_fingerprint().summary() << "\n";
  if (const std::optional<GpuFingerprint> gpu = gpu_fingerprint())
    out_ << "gpu: " << gpu->summary() << (o_.device == Device::cuda ? " (training here)" : "") << "\n";
  out_
       << "train: " << data_.train->describe() << "\ntest:  " << data_.test->describe() << "\n"
       << "model: " << o_.model << ", " << parameter_count(*model_) << " parameters\n"
       << "optimizer: SGD lr " << lr_ << " momentum " << o_.momentum << " weight decay "
       << o_.weight_decay << (o_.nesterov ? " nesterov" : "") << ", schedule "
       << schedule_->describe() << ", batch " << o_.batch_size << "\n";
  if (!frozen_note_.empty()) out_ << frozen_note_ << "\n";
  if (initial_weights_)
    out_ << "initial weights: " << initial_weights_->source
         << (initial_weights_note_.empty() ? "" : "; " + initial_weights_note_) << "\n";
  if (!defaults_.why.empty() && (!o_.lr || !o_.warmup_epochs))
    out_ << "defaults for --model " << o_.model << ": --lr " << defaults_.lr << " --warmup-epochs "
         << defaults_.warmup_epochs << ", since " << defaults_.why << " (either option overrides them)\n";
  if (dp_.active()) out_ << dp_.describe(o_.batch_size, num_threads()) << "\n";
  if (!ranks.empty()) {  // several hosts
    out_ << ranks << "\n";
    if (const std::string warning = keepalive_warning(dp_.comm().timeout_seconds()); !warning.empty())
      out_ << warning << "\n";
  }
}

// The "NAME." prefixes of the model's top-level layers up to and including --freeze-until's.
std::vector<std::string> frozen_layer_prefixes(const Module& model, const std::string& last, const std::string& model_name) {
  std::vector<std::string> prefixes;
  std::string names;
  for (const auto& [name, child] : model.children()) {
    prefixes.push_back(name + ".");
    if (name == last) return prefixes;
    names += (names.empty() ? "" : ", ") + name;
  }
  TUNECNN_FAIL("--freeze-until ", printable(last), ": model ", model_name, " has no such layer; its layers: ", names);
}

// Every parameter of `model`, or under --freeze-until those of the layers after the named one;
// `kept` counts the others' weights.
std::vector<NamedVariable> trained_parameters_of(Module& model, const TrainOptions& o, std::int64_t& kept) {
  if (o.freeze_until.empty()) return model.parameters();
  const std::vector<std::string> frozen = frozen_layer_prefixes(model, o.freeze_until, o.model);
  std::vector<NamedVariable> trained;
  for (const NamedVariable& parameter : model.parameters()) {
    const std::string& name = parameter.first;
    const bool in_frozen_layer = std::any_of(frozen.begin(), frozen.end(),
                                             [&](const std::string& prefix) { return name.rfind(prefix, 0) == 0; });
    if (in_frozen_layer)
      kept += parameter.second.data().numel();
    else
      trained.push_back(parameter);
  }
  return trained;
}

std::vector<NamedVariable> Run::trained_parameters() {
  std::int64_t kept = 0;
  std::vector<NamedVariable> trained = trained_parameters_of(*model_, o_, kept);
  if (o_.freeze_until.empty()) return trained;
  frozen_note_ = "layers " + model_->children().front().first + " to " + o_.freeze_until + " frozen (" +
                 std::to_string(kept) + " parameters not trained)";
  return trained;
}

void Run::create_tuner() {
  if (o_.tune.empty()) return;
  TunerOptions options;
  options.max_workspace_bytes = o_.max_workspace;
  options.only_solvers = o_.force_solvers;
  if (o_.device != Device::cpu) options.clock = device_clock(o_.device);
  const std::filesystem::path cache = o_.tune_cache.empty() ? default_tuning_cache_path() : o_.tune_cache;
  // Rank 0 tunes; the others wait here for its entries, and plan from them without timing.
  tuner_ = dp_.make_tuner(parse_tune_policy(o_.tune), cache, options, o_.device);
  if (o_.tune_budget > 0) tuner_->set_budget(o_.tune_budget);
  planners_ = Planners::all(tuner_);
}

// Every batch size the run will use: full and last training batches (all three conv directions),
// full and last test batches (forward only, unless a training batch has the same size); with
// several ranks, every rank's share of them, so that rank 0's tuning covers all ranks.
void Run::prepare_plans() {
  if (!tuner_) return;
  const std::int64_t n_train = data_.train->size(), n_test = data_.test->size();
  const std::int64_t bs = o_.batch_size;
  const std::set<std::int64_t> train_sizes = dp_.rank_shares({std::min(bs, n_train), n_train % bs});
  // Evaluation runs at the training batch size, so its shapes are the training ones (already
  // planned; only a last partial batch is new): a larger evaluation batch cost MobileNet-224 at
  // batch 8 another 20 problems and 9 s of profiling at batch 256, for no faster evaluation.
  const std::set<std::int64_t> test_sizes = dp_.rank_shares({std::min(bs, n_test), n_test % bs});
  NetworkPlanner planner(tuner_);
  const auto plan_for = [&](std::int64_t size, LayerUse use) {
    Shape shape = data_.train->example_shape();
    shape.insert(shape.begin(), size);
    planner.plan(*model_, shape, use);
  };
  for (std::int64_t size : train_sizes) plan_for(size, LayerUse::training);
  for (std::int64_t size : test_sizes)
    if (!train_sizes.count(size)) plan_for(size, LayerUse::inference);
  if (talk_) out_ << tuner_->summary() << "\n";
  if (dp_.active() && dp_.comm().is_root()) dp_.send_tuning(*tuner_);
}

// --memory-budget: the step's predicted peak brought within it (memory_budget.h), from a copy
// of the model stepped at small batches; the plans for other batch sizes follow the same limit.
void Run::fit_memory_budget() {
  if (o_.memory_budget == 0) return;
  TUNECNN_CHECK(!dp_.active(), "--memory-budget is not planned across ranks yet: leave it out under mpirun");
  StepMemoryQuery query = model_step_query(o_.model, *model_, data_.train->example_shape(),
                                           static_cast<int>(std::min<std::int64_t>(o_.batch_size, data_.train->size())),
                                           static_cast<int>(data_.train->num_classes()),
                                           SgdOptions{lr_, o_.momentum, o_.weight_decay, o_.nesterov});
  query.trained_parameters = [this](Module& copy) {
    std::int64_t kept = 0;
    return trained_parameters_of(copy, o_, kept);
  };
  query.batches_in_flight = train_batches_in_flight(o_.device);
  query.device = o_.device;
  MemoryBudgetPlanning planning{[&] { return predict_step_peak(query); }, {}};
  if (tuner_)
    planning.replan = [this](std::size_t max_workspace) {
      tuner_->set_max_workspace(std::min(max_workspace, o_.max_workspace));
      const bool talking = talk_;
      talk_ = false;  // one tuning line, from the first planning
      prepare_plans();
      talk_ = talking;
    };
  memory_fit_ = tunecnn::fit_memory_budget(o_.memory_budget, planning, o_.device);
  allocator_for(o_.device).reset_peak();
  if (talk_) out_ << "memory budget: " << memory_fit_->describe(o_.memory_budget) << "\n";
}

// One name per line, for `predict` (class names hold no newline: folder names, the data sets' own).
std::string joined_lines(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : "\n") + n;
  return text;
}

// "1,28,28": an example's shape as export-onnx reads it back (parse_chw).
std::string chw_text(const Shape& chw) {
  std::string text;
  for (std::int64_t d : chw) text += (text.empty() ? "" : ",") + std::to_string(d);
  return text;
}

// Rank 0 writes; every rank's dropout stream goes in, so each resumes its own.
void Run::save(const std::string& why) {
  if (o_.checkpoint_dir.empty()) return;
  const std::vector<std::string> dropout_states =
      dp_.comm().gather(dropout_rng_->state(), "collecting the ranks' state for a checkpoint");
  if (!dp_.comm().is_root()) return;
  std::filesystem::create_directories(o_.checkpoint_dir);
  CheckpointData data;
  data.meta = {{"format", "tunecnn-train"},       {"model", o_.model},
               {"data", o_.data},                 {"batch_size", std::to_string(o_.batch_size)},
               {"seed", std::to_string(o_.seed)}, {"epoch", std::to_string(epoch_)},
               {"next_batch", std::to_string(next_batch_)},
               {"dropout_rng", dropout_rng_->state()},
               {"sum_loss", exact(sums_.loss)}, {"sum_seconds", exact(sums_.seconds)},
               {"sum_correct", std::to_string(sums_.correct)}, {"sum_seen", std::to_string(sums_.seen)},
               {"input", chw_text(data_.train->example_shape())},
               {"classes", std::to_string(data_.train->num_classes())},
               {"class_names", joined_lines(data_.train->class_names())}};
  if (!o_.init_from.empty()) data.meta["init_from"] = o_.init_from.string();
  if (!o_.freeze_until.empty()) data.meta["freeze_until"] = o_.freeze_until;
  for (std::size_t r = 1; r < dropout_states.size(); ++r)
    data.meta["dropout_rng/" + std::to_string(r)] = dropout_states[r];
  add_module_state(*model_, data);
  for (auto& [name, tensor] : sgd_->state()) data.tensors.emplace_back("sgd/" + name, tensor);
  const auto path = checkpoint_path(o_.checkpoint_dir);
  // The last checkpoint becomes the previous one before the new one is written: should this
  // write fail or the new file later prove corrupt, --resume still has one to fall back to.
  // After a resume from previous.ckpt, last.ckpt is the bad one: replaced, not kept.
  if (std::filesystem::exists(path) && !resumed_from_previous_)
    std::filesystem::rename(path, previous_checkpoint_path(o_.checkpoint_dir));
  resumed_from_previous_ = false;
  save_checkpoint(path, data);
  if (talk_) out_ << "checkpoint saved to " << path.string() << " (" << why << ")\n";
}

// last.ckpt, else previous.ckpt with a warning when last.ckpt is missing or unreadable; `path`
// says which.
CheckpointData Run::load_resume_checkpoint(std::filesystem::path& path) const {
  TUNECNN_CHECK(!o_.checkpoint_dir.empty(), "--resume needs --checkpoint-dir DIR");
  const auto last = checkpoint_path(o_.checkpoint_dir), previous = previous_checkpoint_path(o_.checkpoint_dir);
  TUNECNN_CHECK(std::filesystem::exists(last) || std::filesystem::exists(previous),
                "--resume: no checkpoint in ", o_.checkpoint_dir.string(), " (neither ", last.filename().string(),
                " nor ", previous.filename().string(), ")");
  std::string problem = "there is no " + last.string();
  if (std::filesystem::exists(last)) {
    try {
      path = last;
      return load_checkpoint(last);
    } catch (const Error& e) {
      if (!std::filesystem::exists(previous)) throw;
      problem = e.message();
    }
  }
  if (talk_) out_ << "warning: " << problem << "; resuming from the checkpoint before it, " << previous.string() << "\n";
  path = previous;
  return load_checkpoint(previous);
}

void Run::resume() {
  std::filesystem::path path;
  const CheckpointData data = load_resume_checkpoint(path);
  resumed_from_previous_ = path == previous_checkpoint_path(o_.checkpoint_dir);
  const std::string source = "checkpoint " + path.string();
  TUNECNN_CHECK(data.value("format") == "tunecnn-train", source, " is not a training checkpoint");
  struct Setting {
    const char *key, *flag;
    std::string expected;
  };
  for (const Setting& s : {Setting{"model", "model", o_.model}, Setting{"data", "data", o_.data},
                           Setting{"batch_size", "batch-size", std::to_string(o_.batch_size)},
                           Setting{"seed", "seed", std::to_string(o_.seed)}})
    TUNECNN_CHECK(data.value(s.key) == s.expected, source, " was written with --", s.flag, " ",
                  printable(data.value(s.key)), "; resume with the same value (got ", s.expected, ")");
  // The optimizer's state is per trained parameter: another set of frozen layers cannot take it.
  const std::string frozen_then = data.meta.count("freeze_until") ? data.value("freeze_until") : "";
  TUNECNN_CHECK(frozen_then == o_.freeze_until, source, " was written with --freeze-until '", printable(frozen_then),
                "'; resume with the same value (got '", printable(o_.freeze_until), "')");
  load_module_state(*model_, data, source);
  std::vector<NamedTensor> sgd_state;
  for (const auto& [name, tensor] : data.tensors)
    if (name.rfind("sgd/", 0) == 0) sgd_state.emplace_back(name.substr(4), tensor);
  sgd_->load_state(sgd_state);
  // Every rank reads the checkpoint itself (a shared folder when the ranks are on several hosts).
  // A rank the checkpoint has no dropout stream for (more ranks than when it was written) keeps
  // its fresh one.
  const std::string rank = dp_.comm().rank() == 0 ? "" : "/" + std::to_string(dp_.comm().rank());
  if (data.meta.count("dropout_rng" + rank)) dropout_rng_->set_state(data.value("dropout_rng" + rank));
  epoch_ = std::stoi(data.value("epoch"));
  next_batch_ = std::stoll(data.value("next_batch"));
  sums_ = {std::stod(data.value("sum_loss")), std::stod(data.value("sum_seconds")),
           std::stoll(data.value("sum_correct")), std::stoll(data.value("sum_seen"))};
  if (talk_)
    out_ << "resumed from " << path.string() << " at epoch " << epoch_ + 1 << ", batch " << next_batch_ << "\n";
}

// "conv1: NCHW, fwd winograd_f2x3 [tiles=8], bwd_data ..., bwd_weights ...  (key)", and
// "pool1: CHWN, fwd pool_tiled [fx=4,fy=2], bwd_data ...  (key)", a line per layer and problem.
std::string Run::plan_text() const {
  std::ostringstream out_;
  const auto describe = [](std::string_view solver, const TuneConfig& config) {
    std::string text(solver);
    return config.values.empty() ? text : text + " [" + config.str() + "]";
  };
  const auto describe_conv = [](const ConvProblem& problem, Direction dir, const ConvPlan& plan) {
    std::string text(plan.solver->name());
    return plan.config.values.empty() ? text
                                      : text + " [" + plan.solver->describe(problem.with_dir(dir), plan.config) + "]";
  };
  for (const auto& [name, layer] : model_->children()) {
    if (auto* conv = dynamic_cast<Conv2d*>(layer.get()))
      for (const auto& [problem, plan] : conv->plans())
        out_ << "  " << name << ": " << to_string(plan.layout()) << ", fwd "
             << describe_conv(problem, Direction::fwd, plan.fwd) << ", bwd_data "
             << describe_conv(problem, Direction::bwd_data, plan.bwd_data) << ", bwd_weights "
             << describe_conv(problem, Direction::bwd_weights, plan.bwd_weights) << "  ("
             << problem.key() << ")\n";
    if (auto* pool = dynamic_cast<Pool2d*>(layer.get()))
      for (const auto& [problem, plan] : pool->plans())
        out_ << "  " << name << ": " << to_string(plan.layout) << ", fwd "
             << describe(plan.fwd.solver->name(), plan.fwd.config) << ", bwd_data "
             << describe(plan.bwd_data.solver->name(), plan.bwd_data.config) << "  ("
             << problem.key() << ")\n";
  }
  return out_.str();
}

// The layer plans, and "loss: softmax_fused  (key)".
void Run::print_plans(const Tensor& logits) {
  if (!talk_) return;
  out_ << plan_text();
  const SoftmaxProblem loss = softmax_problem_of(logits);
  out_ << "  loss: " << planners_.softmax->plan(loss).name() << "  (" << loss.key() << ")\n";
}

// A GPU step's clock stops once its work is queued: each step's backward and update are paid for
// by the next step's loss read, and the last one's here, so the epoch's images/s counts all work.
void Run::wait_for_device() {
  if (o_.device == Device::cpu) return;
  const auto start = Clock::now();
  cuda_synchronize();
  sums_.seconds += seconds_since(start);
}

TrainStatus Run::train_epoch(Progress& progress) {
  model_->train();
  loader_->start_epoch(epoch_, next_batch_);
  const std::int64_t batches = loader_->batches_per_epoch();
  progress.start_epoch(epoch_ + 1, o_.epochs, batches, next_batch_);
  Batch batch;
  data_wait_seconds_ = 0;
  for (;;) {
    const auto wait_start = Clock::now();
    if (!loader_->next(batch)) break;
    data_wait_seconds_ += seconds_since(wait_start);
    const auto start = Clock::now();
    sgd_->set_lr(schedule_->lr_at(epoch_ + static_cast<double>(next_batch_) / batches));
    // A rank's share of a last, small batch can be empty (fewer examples than ranks).
    const auto n = static_cast<std::int64_t>(batch.labels.size());
    StepSums step{.examples = static_cast<double>(n), .stop = stop_requested().load() ? 1.0 : 0.0};
    Variable logits, loss;
    // The last step's gradients go before the forward pass, not after it: they would otherwise
    // be held through it, on top of the activations (AlexNet: 238 MB of 795 at the peak).
    sgd_->zero_grad();
    if (n > 0) {
      logits = model_->forward(input_of(batch));
      loss = softmax_cross_entropy(logits, batch.labels, *planners_.softmax);
      const double loss_value = scalar_value(loss);
      step.loss = loss_value * static_cast<double>(n);
      step.not_finite = std::isfinite(loss_value) ? 0 : 1;
      step.correct = static_cast<double>(count_correct(logits.data(), batch.labels));
    }
    step = reduce_step(step);
    if (step.not_finite > 0) return TrainStatus::diverged;
    if (allreduce_) {
      allreduce_->backward(loss, n, batch.global_size);
      sgd_->step();
    } else {
      // Each parameter steps as soon as its gradient is final, which is then dropped: backward
      // never holds every gradient at once (the same update as a step after it).
      sgd_->backward_and_step(loss);
    }
    if (epoch_ == 0 && next_batch_ == 0 && n > 0) print_plans(logits.data());
    if (step.examples > 0) check_learning(step.loss / step.examples, epoch_ + static_cast<double>(next_batch_) / batches);
    sums_.loss += step.loss;
    sums_.correct += static_cast<std::int64_t>(step.correct);
    sums_.seen += static_cast<std::int64_t>(step.examples);
    sums_.seconds += seconds_since(start);
    ++next_batch_;
    progress.update(next_batch_, sums_.loss / sums_.seen, double(sums_.correct) / sums_.seen,
                    sums_.seen / std::max(sums_.seconds, 1e-9));
    if (o_.checkpoint_every > 0 && next_batch_ % o_.checkpoint_every == 0 && next_batch_ < batches)
      save("every " + std::to_string(o_.checkpoint_every) + " batches");
    if (o_.on_batch_end) o_.on_batch_end(epoch_, next_batch_);
    // Ranks stop together, at the step after the first of them saw Ctrl-C.
    if (dp_.active() ? step.stop > 0 : stop_requested().load()) {
      wait_for_device();
      return TrainStatus::interrupted;
    }
  }
  wait_for_device();
  return TrainStatus::completed;
}

// Once, at the first step past kLearningCheckSteps and past the warm-up: a loss still where
// uniform guessing puts it (ln of the class count) means the run is not learning, which a user
// should hear before the epoch ends, with what to try.
void Run::check_learning(double step_mean_loss, double epoch_position) {
  constexpr std::size_t kWindow = 100;
  constexpr std::int64_t kLearningCheckSteps = 300;
  if (learning_checked_) return;
  recent_losses_.push_back(step_mean_loss);
  if (recent_losses_.size() > kWindow) recent_losses_.pop_front();
  if (++steps_run_ < kLearningCheckSteps || epoch_position < warmup_epochs_) return;
  learning_checked_ = true;
  double mean = 0;
  for (double loss : recent_losses_) mean += loss / static_cast<double>(recent_losses_.size());
  const double chance = std::log(static_cast<double>(data_.train->num_classes()));
  if (!talk_ || mean < 0.98 * chance) return;
  out_ << "\nwarning: after " << steps_run_ << " steps the training loss is still at or above chance (" << mean
       << " over the last " << recent_losses_.size() << " steps; guessing scores ln " << data_.train->num_classes()
       << " = " << chance << "): this run is not learning. Try a lower --lr, or --warmup-epochs 1\n";
}

StepSums Run::reduce_step(StepSums sums) {
  if (!dp_.active()) return sums;
  double values[] = {sums.loss, sums.correct, sums.examples, sums.not_finite, sums.stop};
  dp_.comm().allreduce_sum(values, std::size(values), "summing the step's loss");
  return {values[0], values[1], values[2], values[3], values[4]};
}

EpochMetrics Run::evaluate_epoch() {
  NoGradGuard no_grad;
  model_->eval();
  DataLoader test(data_.test, DataLoaderOptions{.batch_size = o_.batch_size,
                                                .shuffle = false,
                                                .seed = 0,
                                                .shard_rank = dp_.comm().rank(),
                                                .shard_count = dp_.comm().size()});
  test.start_epoch(0);
  double sums[3] = {};  // loss, correct, top-5 correct, over this rank's share
  Batch batch;
  while (test.next(batch)) {
    if (batch.labels.empty()) continue;
    Variable logits = model_->forward(input_of(batch));
    sums[0] += scalar_value(softmax_cross_entropy(logits, batch.labels, *planners_.softmax)) * batch.labels.size();
    sums[1] += static_cast<double>(count_correct(logits.data(), batch.labels));
    sums[2] += static_cast<double>(count_in_top_k(logits.data(), batch.labels, 5));
  }
  dp_.comm().allreduce_sum(sums, std::size(sums), "summing the test results");
  const auto [loss, correct, top5] = sums;
  const double n = static_cast<double>(data_.test->size());
  return EpochMetrics{.epoch = epoch_ + 1,
                      .train_loss = sums_.loss / sums_.seen,
                      .train_acc = double(sums_.correct) / sums_.seen,
                      .test_loss = loss / n,
                      .test_acc = correct / n,
                      .test_top5 = top5 / n,
                      .images_per_s = sums_.seen / std::max(sums_.seconds, 1e-9),
                      .seconds = sums_.seconds,
                      .lr = sgd_->lr()};
}

// Top-5 is ImageNet's figure; on the 10-class sets (MNIST, CIFAR-10) it says little and is left
// out of the line (the CSV log has it always).
std::string Run::top5_text(const EpochMetrics& metrics) const {
  if (o_.data != "imagenet" && data_.train->num_classes() <= 10) return "";
  char text[32];
  std::snprintf(text, sizeof text, " (top-5 %.1f%%)", 100 * metrics.test_top5);
  return text;
}

// Only worth a word when the steps waited noticeably: then decoding is the bottleneck.
std::string Run::data_wait_text(const EpochMetrics& metrics) const {
  const double share = data_wait_seconds_ / std::max(metrics.seconds + data_wait_seconds_, 1e-9);
  if (share < 0.01) return "";
  char text[96];
  std::snprintf(text, sizeof text, ", %.1f s (%.0f%%) waiting for data", data_wait_seconds_,
                100 * share);
  return text;
}

// ", allreduce 1 bucket 246.6 KB/step, 0.4 ms/step not hidden by backward".
std::string Run::allreduce_text() const {
  if (!allreduce_) return "";
  const AllreduceStats& stats = allreduce_->stats();
  char text[128];
  std::snprintf(text, sizeof text, ", allreduce %zu bucket%s %.1f KB/step, %.2f ms/step not hidden by backward",
                stats.buckets, stats.buckets == 1 ? "" : "s", stats.bytes_per_step / 1e3,
                1e3 * stats.wait_seconds / std::max<std::int64_t>(stats.steps, 1));
  return text;
}

// Under --memory-budget, the allocator's peak against what was predicted (the evaluation's forward
// passes included).
std::string Run::memory_text() const {
  const MemoryStats stats = allocator_for(o_.device).stats();
  const std::string what = o_.device == Device::cpu ? "memory" : "device memory";
  return what + ": peak " + mebibytes(stats.peak_bytes) + " (predicted " + mebibytes(memory_fit_->predicted.bytes) +
         ") of the budget " + mebibytes(o_.memory_budget);
}

std::string Run::skipped_text() const {
  const std::int64_t skipped = data_.train->skipped_files() + data_.test->skipped_files();
  if (skipped == 0) return "";
  return ", " + std::to_string(skipped) + " undecodable file" + (skipped == 1 ? "" : "s") +
         " skipped so far (named in warnings)";
}

TrainResult Run::execute() {
  setup();
  if (o_.resume) resume();
  prepare_plans();
  fit_memory_budget();
  if (dp_.active()) dp_.check_same_start(plan_text(), *model_);
  std::unique_ptr<CsvLog> log;
  if (!o_.log_csv.empty() && dp_.comm().is_root()) log = std::make_unique<CsvLog>(o_.log_csv, o_.resume ? epoch_ : 0);
  Progress progress(out_, talk_, isatty(STDOUT_FILENO) && &out_ == &std::cout);
  TrainResult result;
  while (epoch_ < o_.epochs) {
    const TrainStatus status = train_epoch(progress);
    progress.finish();
    if (status == TrainStatus::diverged) {
      result.status = status;
      result.message = "loss became NaN or infinite at epoch " + std::to_string(epoch_ + 1) + ", batch " +
                       std::to_string(next_batch_ + 1) + "; training stopped and the last good "
                       "checkpoint was kept. Try a lower --lr.";
      return result;
    }
    if (status == TrainStatus::interrupted) {
      save("interrupted");
      result.status = status;
      result.message = "interrupted at epoch " + std::to_string(epoch_ + 1) + ", batch " +
                       std::to_string(next_batch_) + "; continue with --resume";
      return result;
    }
    EpochMetrics metrics = evaluate_epoch();
    if (talk_)
      out_ << "epoch " << metrics.epoch << "/" << o_.epochs << ": train loss " << metrics.train_loss
           << " acc " << 100 * metrics.train_acc << "%, test loss " << metrics.test_loss << " acc "
           << 100 * metrics.test_acc << "%" << top5_text(metrics) << ", "
           << static_cast<long>(metrics.images_per_s) << " img/s, "
           << format_duration(metrics.seconds) << data_wait_text(metrics) << skipped_text()
           << allreduce_text() << "\n";
    if (talk_ && memory_fit_) out_ << memory_text() << "\n";
    if (log) log->append(metrics);
    result.epochs.push_back(metrics);
    ++epoch_;
    next_batch_ = 0;
    sums_ = {};
    save("end of epoch " + std::to_string(metrics.epoch));
  }
  if (!o_.export_onnx.empty() && dp_.comm().is_root())
    export_model(*model_, data_.train->example_shape(), o_.export_onnx, out_);
  return result;
}

}  // namespace

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

void install_interrupt_handler() {
  stop_requested();  // construct the flag before a signal can reach it
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

std::filesystem::path checkpoint_path(const std::filesystem::path& dir) { return dir / "last.ckpt"; }
std::filesystem::path previous_checkpoint_path(const std::filesystem::path& dir) { return dir / "previous.ckpt"; }

TrainResult train(const TrainOptions& options, std::ostream& out) {
  Run run(options, out);
  return run.execute();
}

}  // namespace tunecnn
