// One producer thread per epoch fills a bounded queue; within a batch the examples are decoded
// in parallel on TBB, because decoding (JPEG, resizing) rather than copying is what costs.
#include "datasets/data_loader.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/rng.h"

namespace tunecnn {
namespace {

// Mixing rather than adding keeps (seed 1, epoch 0) and (seed 0, epoch 1) unrelated.
std::uint64_t epoch_seed(std::uint64_t seed, int epoch) {
  return splitmix64(seed ^
                    splitmix64(static_cast<std::uint64_t>(static_cast<std::int64_t>(epoch))));
}

// Hand-rolled rather than std::uniform_int_distribution, whose algorithm differs between
// standard libraries: a checkpoint must resume into the same order on any build.
std::uint64_t uniform_below(Rng& rng, std::uint64_t bound) {
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
  std::uint64_t draw;
  do draw = rng.next_u64();
  while (draw >= limit);
  return draw % bound;
}

}  // namespace

std::pair<std::int64_t, std::int64_t> shard_slice(std::int64_t count, int rank, int ranks) {
  return {count * rank / ranks, count * (rank + 1) / ranks};
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  TUNECNN_CHECK(dataset_ != nullptr, "DataLoader needs a dataset");
  TUNECNN_CHECK(options_.batch_size > 0, dataset_->describe(),
                ": batch size must be positive, got ", options_.batch_size);
  TUNECNN_CHECK(options_.prefetch > 0, dataset_->describe(),
                ": prefetch must be at least 1 batch, got ", options_.prefetch);
  TUNECNN_CHECK(options_.shard_count > 0 && options_.shard_rank >= 0 &&
                    options_.shard_rank < options_.shard_count,
                dataset_->describe(), ": shard ", options_.shard_rank, " of ",
                options_.shard_count, " does not exist (the rank must be in [0, count) and the count positive)");
}

DataLoader::~DataLoader() {
  stop_producer();
}

std::int64_t DataLoader::batches_per_epoch() const {
  const std::int64_t n = dataset_->size();
  if (options_.drop_last) return n / options_.batch_size;
  return (n + options_.batch_size - 1) / options_.batch_size;
}

std::vector<std::int64_t> DataLoader::epoch_order(int epoch) const {
  std::vector<std::int64_t> order(static_cast<std::size_t>(dataset_->size()));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!options_.shuffle) return order;
  Rng rng(epoch_seed(options_.seed, epoch));
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[uniform_below(rng, i)]);
  return order;
}

void DataLoader::start_epoch(int epoch, std::int64_t first_batch) {
  TUNECNN_CHECK(first_batch >= 0 && first_batch <= batches_per_epoch(), dataset_->describe(),
                ": cannot start epoch ", epoch, " at batch ", first_batch, " of ",
                batches_per_epoch());
  stop_producer();
  {
    std::lock_guard lock(mutex_);
    stop_ = false;
    finished_ = false;
  }
  started_ = true;
  producer_ = std::thread(&DataLoader::produce, this, epoch, epoch_order(epoch), first_batch);
}

bool DataLoader::next(Batch& out) {
  TUNECNN_CHECK(started_, dataset_->describe(), ": call start_epoch before next");
  std::unique_lock lock(mutex_);
  ready_.wait(lock, [this] { return !queue_.empty() || finished_; });
  if (queue_.empty()) return false;
  Slot slot = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  space_.notify_one();
  if (slot.error) std::rethrow_exception(slot.error);
  out = std::move(slot.batch);
  return true;
}

void DataLoader::produce(int epoch, std::vector<std::int64_t> order, std::int64_t first_batch) {
  const std::int64_t total = batches_per_epoch();
  for (std::int64_t b = first_batch; b < total; ++b) {
    Slot slot;
    try {
      slot.batch = assemble(epoch, order, b);
    } catch (...) {
      slot.error = std::current_exception();
    }
    const bool failed = slot.error != nullptr;
    if (!push(std::move(slot)) || failed) break;
  }
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  ready_.notify_all();
}

Batch DataLoader::assemble(int epoch, const std::vector<std::int64_t>& order,
                           std::int64_t batch) const {
  const std::int64_t global_begin = batch * options_.batch_size;
  const std::int64_t global_count =
      std::min<std::int64_t>(options_.batch_size, dataset_->size() - global_begin);
  const auto [slice_begin, slice_end] =
      shard_slice(global_count, options_.shard_rank, options_.shard_count);
  const std::int64_t begin = global_begin + slice_begin, count = slice_end - slice_begin;
  const Shape example = dataset_->example_shape();
  const std::int64_t example_size = shape_numel(example);
  Shape shape{count};
  shape.insert(shape.end(), example.begin(), example.end());

  Batch out;
  out.images = Tensor::empty(shape);
  out.labels.resize(static_cast<std::size_t>(count));
  out.first_index = begin;
  out.global_size = global_count;
  float* images = out.images.data<float>();
  // Keyed by the example, not its position, so a crop does not depend on the batch size.
  const std::uint64_t epoch_draws = epoch_seed(options_.seed ^ 0xA5A5A5A5A5A5A5A5ull, epoch);
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, count), [&](const auto& range) {
    for (std::int64_t i = range.begin(); i < range.end(); ++i) {
      const std::int64_t index = order[begin + i];
      float* example = images + i * example_size;
      out.labels[i] = options_.augment
          ? dataset_->get_augmented(index, example,
                                    splitmix64(epoch_draws ^ static_cast<std::uint64_t>(index)))
          : dataset_->get(index, example);
    }
  });
  return out;
}

bool DataLoader::push(Slot slot) {
  std::unique_lock lock(mutex_);
  space_.wait(lock, [this] {
    return stop_ || queue_.size() < static_cast<std::size_t>(options_.prefetch);
  });
  if (stop_) return false;
  queue_.push_back(std::move(slot));
  lock.unlock();
  ready_.notify_one();
  return true;
}

void DataLoader::stop_producer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  space_.notify_all();
  if (producer_.joinable()) producer_.join();
  std::lock_guard lock(mutex_);
  queue_.clear();
  finished_ = true;
}

}  // namespace tunecnn
