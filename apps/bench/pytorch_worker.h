#pragma once
// The PyTorch side of `bench conv`: one persistent child process (apps/bench/conv_pytorch.py
// --serve) fed one layer and direction per line, so the two sides alternate layer by layer and
// share the machine's noise. The line protocol is plain text, one request and one reply:
//   time DIR MB IC IH IW OC KH KW SH SW PH PW G WARMUP MIN_REPEATS MAX_REPEATS MAX_SECONDS SETTLE
//     -> ok MEDIAN_MS MIN_MS MAX_MS RUNS
//   peak MB IC IH IW OC KH KW SH SW PH PW G
//     -> ok PEAK_BYTES TENSOR_BYTES RSS_DELTA_BYTES
// or "error MESSAGE". The child first says "ready DESCRIPTION", or "unavailable REASON" and exits.
#include <sys/types.h>

#include <cstddef>
#include <string>

#include "apps/bench/repeat_policy.h"
#include "ops/conv/problem.h"

namespace tunecnn {

struct PytorchTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
};

// One forward call's peak in a fresh process: input and weight bytes plus the growth of the
// peak resident set during the call (see conv_pytorch.py for the method and its caveats).
struct PytorchPeak {
  std::size_t peak_bytes = 0, tensor_bytes = 0, rss_delta_bytes = 0;
};

std::string pytorch_time_request(const ConvProblem& problem, const RepeatPolicy& policy);
std::string pytorch_peak_request(const ConvProblem& problem);
// Parse an "ok ..." reply; throw Error with the child's message on "error ..." or a bad line.
PytorchTiming parse_pytorch_timing(const std::string& reply);
PytorchPeak parse_pytorch_peak(const std::string& reply);

class PytorchWorker {
 public:
  // Starts `python script --serve --threads N` and waits for its ready line. Throws Error saying
  // why when Python cannot start, the script is missing or torch cannot be imported.
  PytorchWorker(const std::string& python, const std::string& script, int threads);
  ~PytorchWorker();  // asks the child to quit and reaps it
  PytorchWorker(const PytorchWorker&) = delete;
  PytorchWorker& operator=(const PytorchWorker&) = delete;

  bool alive() const { return fd_ >= 0 && !broken_; }  // false once the channel has failed
  const std::string& description() const { return description_; }  // "torch 1.13.0, 2 threads"
  PytorchTiming time(const ConvProblem& problem, const RepeatPolicy& policy);
  PytorchPeak forward_peak(const ConvProblem& problem);

 private:
  void shut_down();  // asks the child to quit (closing our end is enough) and reaps it
  std::string request(const std::string& line);
  void send_line(const std::string& line);
  std::string read_line();  // without the newline; throws when the child has gone

  pid_t pid_ = -1;
  int fd_ = -1;  // our end of a socketpair: the child's stdin and stdout
  bool broken_ = false;
  std::string buffer_, description_;
};

}  // namespace tunecnn
