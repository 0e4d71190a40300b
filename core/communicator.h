#pragma once
// The processes of a data-parallel job and the collectives they run together. Training code talks
// to this interface only; MPI lives behind it (core/mpi_communicator.cpp, built when
// TUNECNN_HAVE_MPI), and a single process is the trivial communicator, so `train` without mpirun
// runs exactly as before.
//
// Every collective waits at most timeout_seconds() for the other ranks. MPI has no timeout of its
// own on collectives, so the MPI communicator starts each one non-blocking and polls it; when the
// time is up it prints which collective stalled on which rank and calls MPI_Abort, which ends
// every process of the job. A rank that dies outright is usually noticed sooner by mpirun itself,
// which then stops the others.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tunecnn {

// An allreduce started and not yet known to be complete.
using RequestId = std::int64_t;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank and size among the processes on this host (threads per process follow from them).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  virtual std::string host() const = 0;  // this process's host name
  bool is_root() const { return rank() == 0; }
  double timeout_seconds() const { return timeout_seconds_; }
  void set_timeout_seconds(double seconds) { timeout_seconds_ = seconds; }

  // In-place elementwise sums over all ranks; `what` names the collective in a timeout message.
  virtual void allreduce_sum(float* data, std::size_t count, const char* what) = 0;
  virtual void allreduce_sum(double* data, std::size_t count, const char* what) = 0;
  virtual void allreduce_max(double* data, std::size_t count, const char* what) = 0;
  // Non-blocking sum: `data` must stay alive and untouched until wait_all returns. Every rank must
  // start the same allreduces in the same order.
  virtual RequestId start_allreduce_sum(float* data, std::size_t count) = 0;
  // Lets started allreduces progress without blocking (MPI moves data only inside its calls).
  virtual void progress() = 0;
  // Blocks until every started allreduce is done (or the timeout aborts the job).
  virtual void wait_all(const char* what) = 0;

  // Rank `root`'s bytes in `text` on every rank.
  virtual void broadcast(std::string& text, int root, const char* what) = 0;
  // Every rank's `text`, by rank, on rank 0 (empty elsewhere).
  virtual std::vector<std::string> gather(const std::string& text, const char* what) = 0;
  virtual void barrier(const char* what) = 0;

  // Ends every process of the job after printing `message` (from this rank) to stderr.
  [[noreturn]] virtual void abort(const std::string& message) = 0;

 private:
  double timeout_seconds_ = 300;
};

// The trivial communicator: one rank, collectives that change nothing.
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string host() const override;
  void allreduce_sum(float*, std::size_t, const char*) override {}
  void allreduce_sum(double*, std::size_t, const char*) override {}
  void allreduce_max(double*, std::size_t, const char*) override {}
  RequestId start_allreduce_sum(float*, std::size_t) override { return 0; }
  void progress() override {}
  void wait_all(const char*) override {}
  void broadcast(std::string&, int, const char*) override {}
  std::vector<std::string> gather(const std::string& text, const char*) override { return {text}; }
  void barrier(const char*) override {}
  [[noreturn]] void abort(const std::string& message) override;
};

// Whether this build has MPI (TUNECNN_MPI at configure time).
bool mpi_built();
// Whether this process was started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE, PMIx and
// Hydra set PMI_* variables).
bool launched_by_mpi();

// The job's communicator: MPI when launched by mpirun in an MPI build (MPI_Init here; finalised
// when the last reference goes), otherwise SingleProcess. Throws Error when launched by mpirun
// with more than one process in a build without MPI, since each process would train alone.
std::shared_ptr<Communicator> make_communicator();

}  // namespace tunecnn
