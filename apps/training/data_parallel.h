#pragma once
// The data-parallel side of `train` under mpirun: how the ranks share the work of one run.
//   - threads: a host's cores are split among its ranks;
//   - tuning: rank 0 tunes (profiling every shape any rank will run) and writes its cache file;
//     the other ranks plan from its entries, received by broadcast, so every rank runs rank 0's
//     plan and none times anything. A rank on another host merges the entries into its own cache
//     file (under the file lock, atomically);
//   - consistency: after planning, rank 0 checks that every rank planned the same layers the same
//     way and holds the same weights, and stops the job naming the first rank that differs.
// Gradients are averaged by core/gradient_allreduce.h; metrics are summed in the loop itself.
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "autotune/tuned_planner.h"
#include "core/communicator.h"
#include "core/module.h"

namespace tunecnn {

class DataParallel {
 public:
  explicit DataParallel(std::shared_ptr<Communicator> comm);

  Communicator& comm() const { return *comm_; }
  const std::shared_ptr<Communicator>& comm_ptr() const { return comm_; }
  bool active() const { return comm_->size() > 1; }

  // --threads 0: this host's hardware threads shared evenly by its ranks (at least 1 each).
  int threads_per_rank(int requested) const;

  // Rank 0: sends `tuned`'s cache once it has planned. Other ranks: receives it and returns a
  // planner over those entries alone (policy `off`: it times nothing), after merging them into
  // `cache_path` when this is the first rank of a host other than rank 0's. Waits for rank 0's
  // tuning under a long timeout (an hour at least), since profiling a large model takes minutes.
  void send_tuning(const TunedPlanner& tuned);
  // What send_tuning sends: rank 0's device id, its host, its cache (`stored`, what its file has or
  // gets) and the entries its tuning budget cut short (`partial`: planned with, never stored).
  static std::string tuning_message(const std::string& device_id, const std::string& host,
                                    const TuningCache& stored, const TuningCache& partial = {});
  std::shared_ptr<TunedPlanner> receive_tuning(const std::filesystem::path& cache_path,
                                               const TunerOptions& options);
  // The planner this rank plans with: on rank 0 its own over `cache_path` (under `policy`, for
  // the fingerprint of `device` on this machine; it tunes and writes, then send_tuning), elsewhere
  // receive_tuning's.
  std::shared_ptr<TunedPlanner> make_tuner(TunePolicy policy, const std::filesystem::path& cache_path,
                                           const TunerOptions& options, Device device = Device::cpu);

  // The sizes any rank's share of these whole-job batch sizes can have (an empty share left out):
  // the batch shapes rank 0 tunes so that its plan covers every rank.
  std::set<std::int64_t> rank_shares(const std::set<std::int64_t>& global_sizes) const;

  // Rank 0 compares every rank's plan description and weights checksum with its own; a rank that
  // differs stops the job with a message naming it.
  void check_same_start(const std::string& plans, const Module& model);

  // "data parallel: 2 processes on 1 host, global batch 64 = 32 per process, 1 thread each".
  std::string describe(std::int64_t global_batch, int threads) const;

  // Collective. On rank 0 of a job over several hosts, where each rank runs, by host name and by
  // the address of its host's mpirun daemon, since mpirun names a host it lost by that address
  // ("lost communication with a remote daemon ... on node 10.0.0.2"):
  // "ranks: 0 on a (10.0.0.1), 1 on b (10.0.0.2)". Empty on the other ranks and on one host.
  std::string where_ranks_run() const;

 private:
  std::shared_ptr<Communicator> comm_;
};

// The first IPv4 address in an OpenMPI daemon URI ("1854865408.0;tcp://192.0.2.2:57345;tcp6://...",
// what mpirun passes its ranks as OMPI_MCA_orte_local_daemon_uri); empty when it has none.
std::string daemon_address(std::string_view uri);

// A warning for a job over several hosts when mpirun would notice a lost host only after
// `collective_timeout` seconds or never: mpirun then waits on the lost host after a rank's
// timeout stops the job (docs/FAULTS.md). Reads OpenMPI's daemon keepalive as mpirun passes it to
// its ranks (OMPI_MCA_oob_tcp_keepalive_time, _intvl, _probes; defaults 300, 20, 9 s). Empty
// when the keepalive notices sooner.
std::string keepalive_warning(double collective_timeout);

// Sum of every parameter value in double, in registration order: equal weights give equal sums.
double weights_checksum(const Module& model);

}  // namespace tunecnn
