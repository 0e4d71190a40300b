#include "apps/training/data_parallel.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
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

// OpenMPI's daemon keepalive, in seconds, as mpirun passes it to its ranks; `fallback` (OpenMPI's
// default) when unset or not a number.
double mca_seconds(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr) return fallback;
  double value = 0;
  const std::string_view view(text);
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  return error == std::errc() && end == view.data() + view.size() ? value : fallback;
}

}  // namespace

std::string daemon_address(std::string_view uri) {
  constexpr std::string_view kTcp = "tcp://";
  const std::size_t start = uri.find(kTcp);
  if (start == std::string_view::npos) return "";
  const std::string_view rest = uri.substr(start + kTcp.size());
  return std::string(rest.substr(0, rest.find_first_of(":;")));
}

std::string keepalive_warning(double collective_timeout) {
  const double idle = mca_seconds("OMPI_MCA_oob_tcp_keepalive_time", 300);
  const double interval = mca_seconds("OMPI_MCA_oob_tcp_keepalive_intvl", 20);
  const double probes = mca_seconds("OMPI_MCA_oob_tcp_keepalive_probes", 9);
  const double notice = idle + interval * probes;
  if (idle > 0 && notice < collective_timeout) return "";
  std::ostringstream text;
  text << "warning: the ranks run on several hosts, and mpirun notices a lost host only ";
  if (idle > 0)
    text << "after " << notice << " s (its TCP keepalive " << idle << " + " << probes << " x " << interval << " s)";
  else
    text << "never (its TCP keepalive is off)";
  text << ", not before --collective-timeout " << collective_timeout
       << " s: after a cut link, the job may wait on the lost host for about 15 minutes. Give mpirun"
          " a shorter keepalive, e.g. --mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 5"
          " --mca oob_tcp_keepalive_probes 3 (docs/FAULTS.md; a setting in an mca-params.conf file is"
          " not seen here)";
  return text.str();
}

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

std::string DataParallel::where_ranks_run() const {
  if (comm_->local_size() == comm_->size()) return "";
  const char* uri = std::getenv("OMPI_MCA_orte_local_daemon_uri");
  const std::string address = uri == nullptr ? "" : daemon_address(uri);
  const std::vector<std::string> all =
      comm_->gather(comm_->host() + (address.empty() ? "" : " (" + address + ")"), "telling rank 0 where each rank runs");
  if (!comm_->is_root()) return "";
  std::string text = "ranks:";
  for (std::size_t r = 0; r < all.size(); ++r) text += (r ? ", " : " ") + std::to_string(r) + " on " + all[r];
  return text;
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
