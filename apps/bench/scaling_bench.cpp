// `bench scaling`: each round runs `mpirun -np P bench train ...` once for every P of --procs,
// in turn; the order flips from one round to the next (1,2 then 2,1), so a slow spell on the
// shared machine, or being first after a pause, hits every P alike. Each run reports the global
// images/s of its median step; the table gives, per P, the median over the rounds and its range.
//
// Strong scaling is the default: the global batch is the same for every P, so P processes do
// exactly the training one process would, each on 1/P of the batch; the speedup is what
// data-parallel training buys for the same result. --per-process-batch keeps B per process
// (weak scaling, global batch P x B), which changes the training (a larger batch) but keeps
// each process's kernels as efficient as with one process.
//
// Every P, P = 1 included, runs under mpirun with the same threads per process, so the
// comparison holds the launcher and the per-process setup fixed and varies only the process
// count.
#include "apps/bench/scaling_bench.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/bench/repeat_policy.h"
#include "apps/common/cli.h"
#include "autotune/fingerprint.h"
#include "core/communicator.h"
#include "core/error.h"

extern char** environ;

namespace tunecnn {
namespace {

constexpr const char* kSummary =
    "Data-parallel scaling: runs `bench train` under mpirun with each process count of --procs, "
    "round after round (alternating the counts within a round), and prints per count the global "
    "batch, the median images/s over the rounds (min-max), the speedup over one process, the "
    "scaling efficiency (speedup / processes), and the bytes and the wait of the gradient "
    "allreduce per step. By default the global batch is the same for every count (strong "
    "scaling: the same training as one process); --per-process-batch keeps the batch per process "
    "(weak scaling).";

struct Settings {
  std::string model;
  int batch = 64;  // global, or per process with per_process_batch
  bool per_process_batch = false;
  std::vector<int> procs;
  int rounds = 5, steps = 30, warmup = 5, threads = 1;
  std::string bench, mpirun;

  int global_batch(int p) const { return per_process_batch ? p * batch : batch; }
};

// What one `bench train` run reported on its result line.
struct RunResult {
  double images_per_s = 0;
  long long bytes_per_step = 0, buckets = 0;
  double allreduce_wait_ms = 0;
};

struct ProcessOutput {
  int status = 0;  // exit status, or 128 + the signal that ended it
  std::string out, err;
};

// "1,2,4" -> {1, 2, 4}; every count a whole number of at least 1.
std::vector<int> parse_procs(const std::string& text) {
  std::vector<int> procs;
  for (const std::string& item : split_commas(text)) {
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    TUNECNN_CHECK(*end == '\0' && value >= 1 && value <= 4096, "bench scaling: --procs expects "
                  "process counts such as 1,2,4, got '", item, "' in '", text, "'");
    procs.push_back(static_cast<int>(value));
  }
  TUNECNN_CHECK(!procs.empty(), "bench scaling: --procs names no process count; give e.g. --procs 1,2");
  return procs;
}

std::optional<std::string> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

// --mpirun, else the launcher CMake found beside the MPI library, else mpirun on PATH.
std::string find_mpirun(const std::string& given) {
  if (!given.empty()) return given;
#ifdef TUNECNN_MPIEXEC
  if (access(TUNECNN_MPIEXEC, X_OK) == 0) return TUNECNN_MPIEXEC;
#endif
  if (std::optional<std::string> on_path = find_on_path("mpirun")) return *on_path;
  TUNECNN_FAIL("bench scaling: no mpirun found (neither the one found at configure time nor one on "
               "PATH); install openmpi-bin (Debian) or pass --mpirun PATH");
}

std::string this_executable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  TUNECNN_CHECK(!error, "bench scaling: cannot find its own executable through /proc/self/exe (",
                error.message(), "); pass --bench PATH to the bench executable");
  return self.string();
}

Settings read_settings(const CommandLine& cli) {
  Settings s;
  s.model = cli.get("model");
  s.batch = cli.get_int("batch-size");
  s.per_process_batch = cli.has("per-process-batch");
  s.procs = parse_procs(cli.get("procs"));
  const bool quick = cli.has("quick");
  s.rounds = quick ? 1 : cli.get_int("rounds");
  s.steps = quick ? 3 : cli.get_int("steps");
  s.warmup = quick ? 1 : cli.get_int("warmup");
  s.threads = cli.get_int("threads");
  TUNECNN_CHECK(s.batch >= 1, "bench scaling: --batch-size must be at least 1, got ", s.batch);
  TUNECNN_CHECK(s.rounds >= 1 && s.steps >= 1 && s.warmup >= 0, "bench scaling: --rounds and --steps "
                "must be at least 1 and --warmup at least 0, got ", s.rounds, ", ", s.steps, ", ", s.warmup);
  TUNECNN_CHECK(s.threads >= 1, "bench scaling: --threads must be at least 1, got ", s.threads);
  const int most = *std::max_element(s.procs.begin(), s.procs.end());
  TUNECNN_CHECK(s.per_process_batch || s.batch >= most, "bench scaling: --batch-size ", s.batch,
                " is the global batch and leaves some of ", most, " processes without examples; give "
                "at least ", most, " or --per-process-batch");
  s.bench = cli.has("bench") ? cli.get("bench") : this_executable();
  s.mpirun = find_mpirun(cli.get("mpirun"));
  return s;
}

std::vector<std::string> train_command(const Settings& s, int p) {
  std::vector<std::string> args = {s.mpirun, "-np", std::to_string(p), "--oversubscribe"};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");  // OpenMPI refuses root otherwise
  for (const std::string& arg :
       {s.bench, std::string("train"), std::string("--model"), s.model, std::string("--batch-size"),
        std::to_string(s.global_batch(p)), std::string("--threads"), std::to_string(s.threads),
        std::string("--steps"), std::to_string(s.steps), std::string("--warmup"), std::to_string(s.warmup)})
    args.push_back(arg);
  return args;
}

std::string command_text(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& arg : args) text += (text.empty() ? "" : " ") + arg;
  return text;
}

std::string read_and_remove(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  in.close();
  std::filesystem::remove(path);
  return text.str();
}

// Runs `args` to completion with stdin from /dev/null and stdout and stderr each into a temporary
// file (files rather than pipes: nothing to drain while the child runs, so no deadlock).
ProcessOutput run_process(const std::vector<std::string>& args) {
  static int runs = 0;
  const std::filesystem::path base = std::filesystem::temp_directory_path() /
                                     ("tunecnn-scaling-" + std::to_string(getpid()) + "-" + std::to_string(++runs));
  const std::string out_path = base.string() + ".out", err_path = base.string() + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::filesystem::remove(out_path);
    std::filesystem::remove(err_path);
  }
  TUNECNN_CHECK(rc == 0, "bench scaling: cannot start ", args[0], ": ", std::strerror(rc),
                "; check --mpirun");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ProcessOutput output;
  output.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  output.out = read_and_remove(out_path);
  output.err = read_and_remove(err_path);
  return output;
}

// The key=value fields of the first line starting "result "; empty when there is none.
std::map<std::string, std::string> result_fields(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("result ", 0) != 0) continue;
    std::map<std::string, std::string> fields;
    std::istringstream words(line.substr(7));
    for (std::string word; words >> word;)
      if (const std::size_t eq = word.find('='); eq != std::string::npos)
        fields[word.substr(0, eq)] = word.substr(eq + 1);
    return fields;
  }
  return {};
}

// A single process's result line has no allreduce fields: it sends nothing and waits for nobody.
RunResult parse_run(const std::string& out, const std::string& command) {
  const std::map<std::string, std::string> fields = result_fields(out);
  TUNECNN_CHECK(fields.count("images_per_s"), "bench scaling: `", command,
                "` printed no result line with images_per_s; its output was:\n", out);
  const auto number = [&](const char* key) {
    const auto field = fields.find(key);
    return field == fields.end() ? 0.0 : std::stod(field->second);
  };
  return RunResult{number("images_per_s"), static_cast<long long>(number("bytes_per_step")),
                   static_cast<long long>(number("buckets")), number("allreduce_wait_ms")};
}

// Runs one P; a failed run prints its command and stderr before the error ends the bench.
RunResult run_train(const Settings& s, int p) {
  const std::vector<std::string> args = train_command(s, p);
  const std::string command = command_text(args);
  const ProcessOutput output = run_process(args);
  if (output.status != 0) {
    std::cout << std::endl;  // ends the round's progress line
    std::cerr << "bench scaling: this run failed with exit status " << output.status << ":\n  "
              << command << "\nits stderr:\n" << output.err << std::flush;
    TUNECNN_FAIL("bench scaling: `", command, "` exited with status ", output.status,
                 " (its stderr is printed above); run it by hand to see more");
  }
  return parse_run(output.out, command);
}

std::string format(const char* pattern, double value) {
  char text[32];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// Runs every round, printing a progress line after each; returns the runs per P, in --procs order.
std::vector<std::vector<RunResult>> run_rounds(const Settings& s) {
  std::vector<std::vector<RunResult>> runs(s.procs.size());
  for (int round = 0; round < s.rounds; ++round) {
    std::vector<std::size_t> order(s.procs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    std::cout << "round " << round + 1 << "/" << s.rounds << ":";
    for (std::size_t i : order) {
      runs[i].push_back(run_train(s, s.procs[i]));
      std::cout << " P=" << s.procs[i] << " " << format("%.1f", runs[i].back().images_per_s) << " images/s";
    }
    std::cout << std::endl;  // flushed: a progress line
  }
  return runs;
}

template <class Field>
std::vector<double> values_of(const std::vector<RunResult>& runs, Field field) {
  std::vector<double> values;
  for (const RunResult& run : runs) values.push_back(static_cast<double>(run.*field));
  return values;
}

void print_header(const Settings& s) {
  std::cout << "# " << cpu_fingerprint().summary() << "\n# scaling: model " << s.model << ", "
            << (s.per_process_batch ? "weak scaling (batch " + std::to_string(s.batch) + " per process)"
                                    : "strong scaling (global batch " + std::to_string(s.batch) +
                                          " for every P)")
            << ", " << s.threads << " thread" << (s.threads == 1 ? "" : "s") << " per process, "
            << s.rounds << " round" << (s.rounds == 1 ? "" : "s") << " of " << s.steps
            << " timed steps after " << s.warmup << " warm-up, " << s.mpirun << "\n";
}

// Speedup and efficiency are over P = 1's median; "-" when --procs has no 1.
void print_table(const Settings& s, const std::vector<std::vector<RunResult>>& runs) {
  std::optional<double> single;
  for (std::size_t i = 0; i < s.procs.size(); ++i)
    if (s.procs[i] == 1) single = median_of(values_of(runs[i], &RunResult::images_per_s));
  std::printf("%5s %12s  %-30s %8s %10s %12s %8s %24s\n", "P", "global batch", "images/s median (min-max)",
              "speedup", "efficiency", "bytes/step", "buckets", "allreduce wait ms/step");
  for (std::size_t i = 0; i < s.procs.size(); ++i) {
    const std::vector<double> rates = values_of(runs[i], &RunResult::images_per_s);
    const double median = median_of(rates);
    const std::string rate = format("%.1f", median) + " (" +
                             format("%.1f", *std::min_element(rates.begin(), rates.end())) + "-" +
                             format("%.1f", *std::max_element(rates.begin(), rates.end())) + ")";
    const std::string speedup = single ? format("%.2f", median / *single) : "-";
    const std::string efficiency = single ? format("%.2f", median / *single / s.procs[i]) : "-";
    std::printf("%5d %12d  %-30s %8s %10s %12.0f %8.0f %24.3f\n", s.procs[i], s.global_batch(s.procs[i]),
                rate.c_str(), speedup.c_str(), efficiency.c_str(),
                median_of(values_of(runs[i], &RunResult::bytes_per_step)),
                median_of(values_of(runs[i], &RunResult::buckets)),
                median_of(values_of(runs[i], &RunResult::allreduce_wait_ms)));
  }
  std::fflush(stdout);
}

}  // namespace

int bench_scaling(int argc, const char* const* argv) {
  CommandLine cli("bench scaling", kSummary);
  cli.option("model", "lenet", "model to time (as bench train --model)");
  cli.option("batch-size", "64", "global batch, the same for every process count (with "
                                 "--per-process-batch: the batch of each process)");
  cli.flag("per-process-batch", "weak scaling: --batch-size per process, global batch P x B");
  cli.option("procs", "1,2", "process counts to compare, comma-separated; include 1 for the speedup");
  cli.option("rounds", "5", "runs of every process count");
  cli.option("steps", "30", "timed steps per run");
  cli.option("warmup", "5", "untimed steps first in each run");
  cli.option("threads", "1", "CPU threads per process");
  cli.flag("quick", "1 round of 3 steps after 1 warm-up (a smoke test; the numbers are rough)");
  cli.option("bench", "", "the bench executable mpirun starts (default: this one)");
  cli.option("mpirun", "", "the MPI launcher (default: the one found at configure time, else mpirun "
                           "on PATH)");
  if (!cli.parse(argc, argv)) return 0;
  if (!mpi_built()) {
    std::cerr << "bench scaling: this build has no MPI, so bench train cannot run data-parallel; "
                 "install MPI (Debian: sudo apt-get install libopenmpi-dev openmpi-bin) and rebuild "
                 "(cmake -DTUNECNN_MPI=ON)\n";
    return 2;
  }
  const Settings settings = read_settings(cli);
  print_header(settings);
  std::cout << std::flush;
  const std::vector<std::vector<RunResult>> runs = run_rounds(settings);
  print_table(settings, runs);
  return 0;
}

}  // namespace tunecnn
