#pragma once
// Batches a Dataset in a shuffled order, assembling them ahead on a background thread so the
// training step rarely waits for data. Each epoch's order depends only on (seed, epoch), so a
// run resumed from a checkpoint at batch k sees exactly the batches an uninterrupted run would.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "datasets/dataset.h"

namespace tunecnn {

struct DataLoaderOptions {
  std::int64_t batch_size = 64;
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool drop_last = false;  // drop the last, smaller batch of an epoch
  int prefetch = 2;        // batches assembled ahead of the consumer
  // Serve Dataset::get_augmented (random crops and flips) rather than get: training sets.
  bool augment = false;
  // Data-parallel training: serve only this rank's share of every batch. The epoch order and the
  // batch boundaries are the single-process ones for batch_size (the global batch); rank r of P
  // takes the contiguous slice [r*B/P, (r+1)*B/P) of each batch of B examples, so the P ranks
  // together see exactly the batches one process would (possibly an empty slice when B < P).
  int shard_rank = 0;
  int shard_count = 1;
};

// [begin, end) of rank `rank`'s slice of `count` examples shared by `ranks`.
std::pair<std::int64_t, std::int64_t> shard_slice(std::int64_t count, int rank, int ranks);

// One consumer: start_epoch and next are called from the same thread.
class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Stops any epoch in progress and starts `epoch` at batch `first_batch`.
  void start_epoch(int epoch, std::int64_t first_batch = 0);
  // Blocks until the next batch is ready; false at the end of the epoch. Rethrows what
  // assembling the batch threw.
  bool next(Batch& out);
  std::int64_t batches_per_epoch() const;
  // The example indices of an epoch, in the order they are served.
  std::vector<std::int64_t> epoch_order(int epoch) const;

  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  std::thread producer_;
  std::mutex mutex_;
  std::condition_variable ready_;  // a slot was queued or the producer finished
  std::condition_variable space_;  // a slot was taken or a stop was asked for
  std::deque<Slot> queue_;
  bool stop_ = false;
  bool finished_ = true;
  bool started_ = false;

  void produce(int epoch, std::vector<std::int64_t> order, std::int64_t first_batch);
  Batch assemble(int epoch, const std::vector<std::int64_t>& order, std::int64_t batch) const;
  bool push(Slot slot);
  void stop_producer();
};

}  // namespace tunecnn
