// autotune explain KEY: which solvers can run a conv, pooling or softmax problem and why not, and
// what the cache measured for it, so a surprising choice can be traced to its numbers.
#include <algorithm>
#include <ostream>
#include <sstream>
#include <utility>

#include "apps/autotune_cli/cache_files.h"
#include "apps/autotune_cli/describe.h"
#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/autotune_cli/text_table.h"
#include "ops/conv/plan.h"
#include "ops/conv/registry.h"
#include "ops/pool/plan.h"
#include "ops/pool/registry.h"
#include "ops/softmax/plan.h"
#include "ops/softmax/registry.h"

namespace tunecnn {
namespace {

std::string layouts_text(const std::vector<Layout>& layouts) {
  std::string text;
  for (Layout layout : layouts) text += (text.empty() ? "" : " ") + std::string(to_string(layout));
  return text;
}

void print_solver(const ConvSolver& solver, const ConvProblem& problem, std::ostream& out) {
  const bool reference = &solver == &direct_conv_solver();
  std::string why;
  const bool applicable = solver.applicable(problem, &why);
  out << "  " << solver.name() << (reference ? " (reference)" : "") << ": "
      << (applicable ? "applicable" : "not applicable: " + why) << "\n";
  if (!applicable) return;  // layouts and configs of a solver that cannot run mean nothing
  out << "    layouts: " << layouts_text(solver.layouts(problem)) << "\n";
  for (const TuneConfig& config : solver.configs(problem))
    out << "    config " << config_text(config) << ": workspace "
        << format_bytes(solver.workspace_bytes(problem, config)) << "\n";
}

// A solver, config and layout: the untuned default a cached entry is compared with.
struct Choice {
  std::string solver;
  TuneConfig config;
  Layout layout = Layout::NCHW;
};

// The untuned default for this direction: what FirstApplicablePlanner would run.
Choice default_choice(const ConvProblem& problem) {
  const ConvPlan plan = FirstApplicablePlanner().plan(problem.with_dir(Direction::fwd)).for_direction(problem.dir);
  return {std::string(plan.solver->name()), plan.config, plan.layout};
}

// Pooling's untuned default: the first applicable solver's first config, in NCHW.
Choice default_choice(const PoolProblem& problem) {
  const PoolLayerPlan plan = FirstApplicablePoolPlanner().plan(problem.with_dir(Direction::fwd), Layout::NCHW);
  const PoolPlan& dir = problem.dir == Direction::fwd ? plan.fwd : plan.bwd_data;
  return {std::string(dir.solver->name()), dir.config, Layout::NCHW};
}

Choice default_choice(const SoftmaxProblem& problem) {
  return {std::string(FirstApplicableSoftmaxPlanner().plan(problem).name()), {}, Layout::NCHW};
}

bool is_plan(const CandidateResult& c, const std::string& solver, const TuneConfig& config,
             Layout layout) {
  return c.solver == solver && c.config == config && c.layout == layout;
}

std::string speedup_over(const CandidateResult& c, const CandidateResult* base) {
  if (!c.correct || base == nullptr || c.median_ms <= 0) return "-";
  return format_speedup(base->median_ms / c.median_ms);
}

void print_entry(const TuningEntry& entry, const Choice& fallback, std::ostream& out) {
  const CandidateResult* slowest = nullptr;
  const CandidateResult* untuned = nullptr;
  for (const CandidateResult& c : entry.candidates) {
    if (!c.correct) continue;
    if (slowest == nullptr || c.median_ms > slowest->median_ms) slowest = &c;
    if (is_plan(c, fallback.solver, fallback.config, fallback.layout)) untuned = &c;
  }
  TextTable table({"", "solver", "config", "layout", "median ms", "spread ms", "runs", "workspace",
                   "status", "vs slowest", "vs default"},
                  {"median ms", "spread ms", "runs", "workspace", "vs slowest", "vs default"});
  for (const CandidateResult& c : entry.candidates)
    table.add_row({is_plan(c, entry.solver, entry.config, entry.layout) ? "*" : "", c.solver,
                   config_text(c.config), std::string(to_string(c.layout)), format_ms(c.median_ms),
                   format_ms(c.spread_ms), std::to_string(c.runs), format_bytes(c.workspace_bytes),
                   c.correct ? "correct" : "DISQUALIFIED", speedup_over(c, slowest),
                   speedup_over(c, untuned)});
  out << "  chosen (*): " << choice_summary(entry.solver, entry.config, entry.layout) << "; tuned "
      << entry.provenance.date << " on " << entry.provenance.host << "\n";
  table.print(out, "  ");
  if (untuned == nullptr) out << "  the default was not timed, so there is no speedup over it\n";
}

// ", from the system cache FILE" when a system cache is in use, naming the layer an entry is from.
std::string layer_note(const CacheLayers& layers, const std::string& device_id,
                       const std::string& key) {
  if (!layers.has_system()) return "";
  return layers.layer_of(device_id, key) == "system"
             ? ", from the system cache " + layers.system_path.string()
             : ", from the user's cache " + layers.user_path.string();
}

// This machine's entry when it has one; otherwise every device's, each named.
void print_cached(const CacheLayers& layers, const std::string& key, int batch,
                  const Choice& fallback, const std::string& here, std::ostream& out) {
  const TuningCache cache = layers.view();
  if (const TuningEntry* entry = cache.find(here, key)) {
    out << "\ncached for this machine (" << here << ")" << layer_note(layers, here, key) << ":\n";
    print_entry(*entry, fallback, out);
    return;
  }
  bool found = false;
  for (const auto& [id, device] : cache.devices())
    if (const TuningEntry* entry = cache.find(id, key)) {
      out << "\ncached for device " << id << " (" << fingerprint_summary(device.fingerprint)
          << "), not this machine (" << here << ")" << layer_note(layers, id, key) << ":\n";
      print_entry(*entry, fallback, out);
      found = true;
    }
  if (!found)
    out << "\nnot in the cache; measure it with `autotune profile --model M --batch " << batch
        << "` on a model with this layer\n";
}

void print_solver(const PoolSolver& solver, const PoolProblem& problem, std::ostream& out) {
  const bool reference = &solver == &direct_pool_solver();
  std::string why;
  const bool applicable = solver.applicable(problem, &why);
  out << "  " << solver.name() << (reference ? " (reference)" : "") << ": "
      << (applicable ? "applicable" : "not applicable: " + why) << "\n";
  if (!applicable) return;
  const std::vector<TuneConfig> configs = solver.configs(problem);
  out << "    layouts: " << layouts_text(solver.layouts(problem)) << "\n    configs: " << configs.size();
  if (configs.size() > 1) out << " (" << config_text(configs.front()) << " ... " << config_text(configs.back()) << ")";
  out << "\n";
}

void print_solver(const SoftmaxSolver& solver, const SoftmaxProblem& problem, std::ostream& out) {
  std::string why;
  const bool applicable = solver.applicable(problem, &why);
  out << "  " << solver.name() << ": " << (applicable ? "applicable" : "not applicable: " + why) << "\n";
}

// The problem's description and its solvers; returns the untuned default and the batch.
std::pair<Choice, int> describe_problem(const std::string& key, std::ostream& out) {
  if (key.rfind("pool", 0) == 0) {
    const PoolProblem problem = parse_pool_key(key);
    out << problem.key() << "\n  output " << problem.oh() << "x" << problem.ow() << "\n\nsolvers (registry order):\n";
    for (const PoolSolver* solver : cpu_pool_solvers()) print_solver(*solver, problem, out);
    return {default_choice(problem), problem.mb};
  }
  if (key.rfind("softmax", 0) == 0) {
    const SoftmaxProblem problem = parse_softmax_key(key);
    out << problem.key() << "\n  logits " << problem.rows << "x" << problem.classes << "\n\nsolvers (registry order):\n";
    for (const SoftmaxSolver* solver : cpu_softmax_solvers()) print_solver(*solver, problem, out);
    return {default_choice(problem), problem.rows};
  }
  const ConvProblem problem = parse_conv_key(key);
  out << problem.key() << "\n  output " << problem.oh() << "x" << problem.ow() << ", "
      << problem.macs() << " multiply-adds\n\nsolvers (registry order):\n";
  for (const ConvSolver* solver : cpu_conv_solvers()) print_solver(*solver, problem, out);
  return {default_choice(problem), problem.mb};
}

}  // namespace

int run_explain(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli("autotune explain KEY",
                     "Explains the decision for one problem KEY as `autotune show` prints it: "
                     "a conv key (\"conv fwd mb64 ic1 ih28 iw28 oc6 kh5 kw5 sh1 sw1 ph2 pw2 g1\"), "
                     "a pooling key (\"pool max fwd mb64 c16 ih28 iw28 kh2 kw2 sh2 sw2 ph0 pw0\") "
                     "or a softmax key (\"softmax_xent mb64 classes10\"); quoting is optional: which solvers apply and why not, their layouts and "
                     "workspaces, and every candidate the cache timed (the user's cache over the "
                     "read-only system cache, naming the one it came from when there is a "
                     "system cache).");
  cli.common_options();
  if (!cli.parse(args, out, 1, SIZE_MAX)) return 0;
  apply_threads(cli.options());
  std::string key;
  for (const std::string& word : cli.positional()) key += (key.empty() ? "" : " ") + word;
  // The key as the cache writes it (parsing normalises spacing and field order).
  std::ostringstream header;
  const auto [fallback, batch] = describe_problem(key, header);
  const std::string canonical = header.str().substr(0, header.str().find('\n'));
  out << header.str();
  out << "\ndefault (untuned): " << choice_summary(fallback.solver, fallback.config, fallback.layout) << "\n";

  const std::filesystem::path path = tune_cache_path(cli.options());
  const CacheLayers layers = read_cache_layers(path, err);
  if (!layers.has_user && !layers.has_system()) {
    out << "\nno tuning cache at " << path.string()
        << "; create one with `autotune profile --model M --batch " << batch << "`\n";
    return 0;
  }
  print_cached(layers, canonical, batch, fallback, this_device().id, out);
  return 0;
}

}  // namespace tunecnn
