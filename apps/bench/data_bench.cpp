// `bench data`: per round, a fresh DataLoader over each view (the training split with random crops
// and flips, as the trainer's training loader; the test split with centre crops, as evaluation)
// serves N batches into nothing, and the round's images/s is N * batch over the wall time from
// start_epoch to the last batch, producer start-up included (training pays it every epoch).
// Rounds alternate the views so a slow spell on the shared machine hits both; the median per view
// is the result. ms per image per thread is threads / rate: one image's decode + resize + crop on
// one core, comparable across thread counts.
#include "apps/bench/data_bench.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench/repeat_policy.h"
#include "apps/common/cli.h"
#include "apps/training/data_sources.h"
#include "autotune/fingerprint.h"
#include "core/error.h"
#include "core/threading.h"
#include "datasets/data_loader.h"
#include "models/registry.h"

namespace tunecnn {
namespace {

constexpr const char* kSummary =
    "Times the input pipeline alone: builds the data set as train does, runs a DataLoader "
    "(random crops and flips on the training split, as training does; centre crops on the test "
    "split, as evaluation) for N batches per round with nothing consuming them, and prints "
    "images/s per round, the median of each view, and the milliseconds one image takes on one "
    "thread. For --data imagenet, compare with the images/s `bench train` reports for the model: "
    "the pipeline keeps up when it is faster.";

struct View {
  std::string name;  // "train" or "test"
  std::shared_ptr<const Dataset> data;
  bool augment = false;
  std::vector<double> images_per_s;
};

struct Settings {
  std::int64_t batch = 8;
  int batches = 20;
  int rounds = 3;
};

// Pulls `settings.batches` batches through a fresh loader (into the next epoch when one runs out)
// and returns the images served per second.
double time_view(const View& view, const Settings& settings, int round) {
  DataLoader loader(view.data, {.batch_size = settings.batch, .seed = 1, .augment = view.augment});
  // Each round starts its own epoch, so rounds see different orders and crops.
  int epoch = round * 1000;
  std::int64_t images = 0;
  Batch batch;
  const double seconds = seconds_of([&] {
    loader.start_epoch(epoch);
    for (int served = 0; served < settings.batches;) {
      if (!loader.next(batch)) {
        loader.start_epoch(++epoch);
        continue;
      }
      images += static_cast<std::int64_t>(batch.labels.size());
      ++served;
    }
  });
  return static_cast<double>(images) / seconds;
}

void print_round(const std::vector<View>& views, int round, int rounds) {
  std::cout << "round " << round + 1 << "/" << rounds << ":";
  for (std::size_t v = 0; v < views.size(); ++v) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f", views[v].images_per_s.back());
    std::cout << (v ? ", " : " ") << views[v].name << " " << rate << " images/s";
  }
  std::cout << std::endl;  // flushed: a progress line
}

void print_result(const View& view, const std::string& data, const std::string& model,
                  const Settings& settings) {
  const double rate = median_of(view.images_per_s);
  std::printf(
      "result data=%s view=%s augment=%s model=%s batch=%lld batches=%d rounds=%d threads=%d "
      "images_per_s=%.1f ms_per_image_per_thread=%.2f skipped_files=%lld\n",
      data.c_str(), view.name.c_str(), view.augment ? "on" : "off", model.c_str(),
      static_cast<long long>(settings.batch), settings.batches, settings.rounds, num_threads(),
      rate, 1e3 * num_threads() / rate, static_cast<long long>(view.data->skipped_files()));
  std::fflush(stdout);
}

}  // namespace

int bench_data(int argc, const char* const* argv) {
  CommandLine cli("bench data", kSummary);
  cli.option("data", "imagenet", "the data set, as train --data: " + data_set_names());
  cli.option("data-dir", "",
             "its folder, as train --data-dir (required for imagenet: DIR/train, DIR/val)");
  cli.option("model", "mobilenet", "the model whose input shape sets the crop side, as in train");
  cli.option("batch-size", "8", "examples per batch");
  cli.option("batches", "20", "batches served per view per round");
  cli.option("threads", "2", "CPU threads (TBB) that decode; 0: all");
  cli.option("rounds", "3", "rounds; each times both views");
  if (!cli.parse(argc, argv)) return 0;
  const Settings settings{cli.get_int("batch-size"), cli.get_int("batches"), cli.get_int("rounds")};
  TUNECNN_CHECK(settings.batch > 0 && settings.batches > 0 && settings.rounds > 0,
                "bench data: --batch-size, --batches and --rounds must be positive, got ",
                settings.batch, ", ", settings.batches, " and ", settings.rounds);
  TUNECNN_CHECK(cli.get_int("threads") >= 0, "bench data: --threads must be 0 (all) or more, got ",
                cli.get_int("threads"));
  set_num_threads(cli.get_int("threads"));
  const std::string data = cli.get("data"), model = cli.get("model");
  const DataSplits splits = load_data(data, cli.get("data-dir"), model_input_shape(model));
  std::vector<View> views = {{"train", splits.train, true, {}}, {"test", splits.test, false, {}}};

  std::cout << "# " << cpu_fingerprint().summary() << "\n# " << kSummary << "\n";
  for (const View& view : views) {
    TUNECNN_CHECK(view.data->size() > 0, "bench data: the ", view.name, " split of ", data,
                  " holds no examples");
    std::cout << "# data " << view.name << ": " << view.data->describe() << "\n";
  }
  for (int round = 0; round < settings.rounds; ++round) {
    for (View& view : views) view.images_per_s.push_back(time_view(view, settings, round));
    print_round(views, round, settings.rounds);
  }
  for (const View& view : views) print_result(view, data, model, settings);
  return 0;
}

}  // namespace tunecnn
