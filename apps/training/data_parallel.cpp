#include "apps/training/data_parallel.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "autotune/fingerprint.h"
#include "autotune/tuning_cache.h"
#include "autotune/tuning_cache_layers.h"
#include "core/error.h"
#include "datasets/data_loader.h"

namespace tunecnn {
namespace {

// Profiling AlexNet or MobileNet from an empty cache takes minutes, not the seconds a step does.
constexpr double kTuningTimeoutSeconds = 3600;

// The first line of a text, and the rest after it.
std::pair<std::string, std::string> split_first_line(const std::string& text) {
  const std::size_t end = text.find('\n');
  if (end == std::string::npos) return {text, ""};
  return {text.substr(0, end), text.substr(end + 1)};
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {
  TUNECNN_CHECK(comm_ != nullptr, "DataParallel needs a communicator");
}

int DataParallel::threads_per_rank(int requested) const {
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / comm_->local_size());
}

// Lines: the device id, the host, the size of the stored cache's YAML; then that YAML and the
// partial entries' YAML.
std::string DataParallel::tuning_message(const std::string& device_id, const std::string& host,
                                         const TuningCache& stored, const TuningCache& partial) {
  const std::string stored_yaml = stored.to_yaml();
  return device_id + "\n" + host + "\n" + std::to_string(stored_yaml.size()) + "\n" + stored_yaml + partial.to_yaml();
}

void DataParallel::send_tuning(const TunedPlanner& tuned) {
  std::string message = tuning_message(tuned.device_id(), comm_->host(), tuned.cache(), tuned.partial_cache());
  comm_->broadcast(message, 0, "sending rank 0's tuning to the other ranks");
}

std::shared_ptr<TunedPlanner> DataParallel::receive_tuning(const std::filesystem::path& cache_path,
                                                           const TunerOptions& options) {
  const double timeout = comm_->timeout_seconds();
  comm_->set_timeout_seconds(std::max(timeout, kTuningTimeoutSeconds));
  std::string message;
  comm_->broadcast(message, 0, "waiting for rank 0's tuning");
  comm_->set_timeout_seconds(timeout);
  const auto [device_id, rest] = split_first_line(message);
  const auto [root_host, sized] = split_first_line(rest);
  const auto [size_text, yaml] = split_first_line(sized);
  const std::size_t stored_size = std::min<std::size_t>(std::stoull(size_text), yaml.size());
  std::vector<std::string> warnings;
  TuningCache cache = parse_tuning_cache(yaml.substr(0, stored_size), "rank 0's tuning cache", warnings);
  const TuningCache partial = parse_tuning_cache(yaml.substr(stored_size), "rank 0's entries cut short by --tune-budget", warnings);
  std::map<std::string, std::string> fields;
  if (const auto device = cache.devices().find(device_id); device != cache.devices().end())
    fields = device->second.fingerprint;
  if (comm_->local_rank() == 0 && comm_->host() != root_host && !cache_path.empty()) {
    // Another host: keep rank 0's measurements in this host's cache file too, but not what rank
    // 0 read from the system cache this host has as well. Hosts sharing one file (a home folder
    // on NFS) find rank 0's entries already there and leave it alone: one writer, not one per host.
    const TuningCache measured =
        above_system(cache, load_system_tuning_cache(default_system_tuning_cache_path()).cache);
    const TuningCache here = load_tuning_cache(cache_path).cache;
    if (!(merge(here, measured) == here))
      update_tuning_cache_file(cache_path, [&](TuningCache& fresh) { fresh = merge(fresh, measured); });
  }
  // After the host's file is written: what the budget cut short is planned with, never stored.
  for (const auto& [id, device] : partial.devices())
    for (const auto& [key, entry] : device.entries) cache.put(id, device.fingerprint, entry);
  return std::make_shared<TunedPlanner>(TunePolicy::off, std::move(cache), options, device_id,
                                        std::move(fields));
}

std::shared_ptr<TunedPlanner> DataParallel::make_tuner(TunePolicy policy,
                                                       const std::filesystem::path& cache_path,
                                                       const TunerOptions& options, Device device) {
  if (!comm_->is_root()) return receive_tuning(cache_path, options);
  DeviceIdentity identity = device_identity(device);  // after the threads are set
  return std::make_shared<TunedPlanner>(policy, cache_path, options, std::move(identity.id),
                                        std::move(identity.fields),
                                        default_system_tuning_cache_path());
}

std::set<std::int64_t> DataParallel::rank_shares(const std::set<std::int64_t>& global_sizes) const {
  std::set<std::int64_t> shares;
  for (std::int64_t size : global_sizes)
    for (int r = 0; r < comm_->size(); ++r) {
      const auto [begin, end] = shard_slice(size, r, comm_->size());
      shares.insert(end - begin);
    }
  shares.erase(0);
  return shares;
}

void DataParallel::check_same_start(const std::string& plans, const Module& model) {
  std::ostringstream mine;
  mine.precision(17);
  mine << "weights checksum " << weights_checksum(model) << "\n" << plans;
  const std::vector<std::string> all = comm_->gather(mine.str(), "comparing the ranks' plans");
  std::string problem;
  for (std::size_t r = 1; r < all.size() && problem.empty(); ++r)
    if (all[r] != all[0])
      problem = "rank " + std::to_string(r) + " would train differently from rank 0 (" +
                (split_first_line(all[r]).first != split_first_line(all[0]).first
                     ? "other initial weights: check that every rank reads the same checkpoint"
                     : "another layer plan") +
                ")";
  std::string verdict = problem;
  comm_->broadcast(verdict, 0, "comparing the ranks' plans");
  if (!verdict.empty()) {
    if (comm_->is_root()) comm_->abort(verdict);
    comm_->barrier("stopping after a plan mismatch");  // rank 0's abort ends this process
  }
}

std::string DataParallel::describe(std::int64_t global_batch, int threads) const {
  const int ranks = comm_->size();
  std::ostringstream text;
  text << "data parallel: " << ranks << " processes, " << comm_->local_size() << " on this host, "
       << "global batch " << global_batch << " = " << global_batch / ranks
       << (global_batch % ranks ? "-" + std::to_string(global_batch / ranks + 1) : "")
       << " per process, " << threads << " thread" << (threads == 1 ? "" : "s")
       << " each; gradients averaged by allreduce, BatchNorm statistics per process";
  return text.str();
}

double weights_checksum(const Module& model) {
  double sum = 0;
  for (const auto& [name, parameter] : model.parameters()) {
    const Tensor& data = parameter.data();
    if (data.dtype() != DType::f32) continue;
    const float* values = data.data<float>();
    for (std::int64_t i = 0; i < data.numel(); ++i) sum += values[i];
  }
  return sum;
}

}  // namespace tunecnn
