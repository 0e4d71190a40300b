// The MPI communicator (built when TUNECNN_HAVE_MPI). Every collective is started non-blocking and
// then polled against a deadline: MPI itself never times a collective out, and a job whose rank
// hung must end with a message rather than wait forever.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

#include "core/communicator.h"
#include "core/error.h"

namespace tunecnn {
namespace {

using Clock = std::chrono::steady_clock;

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // Only the training thread calls MPI (the data loader's threads never do).
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_mpi_ = true;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &world_);
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &size_);
    MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_);
    MPI_Comm_rank(local_, &local_rank_);
    MPI_Comm_size(local_, &local_size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    host_.assign(name, static_cast<std::size_t>(length));
  }
  ~MpiCommunicator() override {
    MPI_Comm_free(&local_);
    MPI_Comm_free(&world_);
    if (owns_mpi_) MPI_Finalize();
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  std::string host() const override { return host_; }

  void allreduce_sum(float* data, std::size_t count, const char* what) override {
    reduce(data, count, MPI_FLOAT, MPI_SUM, what);
  }
  void allreduce_sum(double* data, std::size_t count, const char* what) override {
    reduce(data, count, MPI_DOUBLE, MPI_SUM, what);
  }
  void allreduce_max(double* data, std::size_t count, const char* what) override {
    reduce(data, count, MPI_DOUBLE, MPI_MAX, what);
  }

  RequestId start_allreduce_sum(float* data, std::size_t count) override {
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, data, checked_count(count), MPI_FLOAT, MPI_SUM, world_, &request);
    pending_.push_back(request);
    return next_request_++;
  }
  void progress() override {
    if (pending_.empty()) return;
    int done = 0;
    MPI_Testall(static_cast<int>(pending_.size()), pending_.data(), &done, MPI_STATUSES_IGNORE);
    if (done) pending_.clear();
  }
  void wait_all(const char* what) override {
    wait(pending_, what);
    pending_.clear();
  }

  void broadcast(std::string& text, int root, const char* what) override {
    std::uint64_t length = text.size();
    std::vector<MPI_Request> request(1);
    MPI_Ibcast(&length, 1, MPI_UINT64_T, root, world_, &request[0]);
    wait(request, what);
    text.resize(length);
    MPI_Ibcast(text.data(), checked_count(length), MPI_CHAR, root, world_, &request[0]);
    wait(request, what);
  }

  std::vector<std::string> gather(const std::string& text, const char* what) override {
    const int length = checked_count(text.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0);
    std::vector<MPI_Request> request(1);
    MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world_, &request[0]);
    wait(request, what);
    std::vector<int> offsets(lengths.size());
    int total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) offsets[r] = std::exchange(total, total + lengths[r]);
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Igatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                 0, world_, &request[0]);
    wait(request, what);
    std::vector<std::string> texts;
    for (std::size_t r = 0; r < lengths.size(); ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
    return texts;
  }

  void barrier(const char* what) override {
    std::vector<MPI_Request> request(1);
    MPI_Ibarrier(world_, &request[0]);
    wait(request, what);
  }

  [[noreturn]] void abort(const std::string& message) override {
    std::cerr << "\nerror: rank " << rank_ << " of " << size_ << " (" << host_ << "): " << message
              << "\n" << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();  // MPI_Abort does not return; this tells the compiler so
  }

 private:
  MPI_Comm world_ = MPI_COMM_NULL, local_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  bool owns_mpi_ = false;
  std::vector<MPI_Request> pending_;
  RequestId next_request_ = 0;

  int checked_count(std::size_t count) const {
    TUNECNN_CHECK(count <= static_cast<std::size_t>(INT32_MAX), "MPI message of ", count,
                  " elements is over MPI's int count");
    return static_cast<int>(count);
  }

  void reduce(void* data, std::size_t count, MPI_Datatype type, MPI_Op op, const char* what) {
    std::vector<MPI_Request> request(1);
    MPI_Iallreduce(MPI_IN_PLACE, data, checked_count(count), type, op, world_, &request[0]);
    wait(request, what);
  }

  // Polls until every request completes; aborts the job past the timeout. Spins for the first
  // millisecond (the usual wait between ranks in step), then sleeps a little between tests so a
  // long wait does not take a core from the loader or another rank on the same host.
  void wait(std::vector<MPI_Request>& requests, const char* what) {
    if (requests.empty()) return;
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(timeout_seconds());
    for (;;) {
      int done = 0;
      MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
      if (done) return;
      const auto now = Clock::now();
      if (now > deadline)
        abort(std::string(what) + ": no answer from the other ranks for " +
              std::to_string(static_cast<int>(timeout_seconds())) +
              " s (--collective-timeout); another rank has died or hung. Stopping the job.");
      if (now - start > std::chrono::milliseconds(1))
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
};

}  // namespace

std::shared_ptr<Communicator> make_mpi_communicator() { return std::make_shared<MpiCommunicator>(); }

}  // namespace tunecnn
