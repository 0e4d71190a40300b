#include "apps/bench/model_split.h"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <ostream>

#include "apps/bench/layer_split.h"
#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "core/init.h"
#include "core/sgd.h"
#include "models/registry.h"
#include "ops/conv/conv2d.h"
#include "ops/pool/pool2d.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn {
namespace {

constexpr int kClasses = 1000;  // ImageNet's, as MobileNet is benchmarked

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct NamedConv {
  std::string name;
  Conv2d* conv;
};

void collect(Module& module, const std::string& prefix, std::vector<NamedConv>& convs,
             std::vector<Pool2d*>& pools) {
  if (auto* conv = dynamic_cast<Conv2d*>(&module)) convs.push_back({prefix, conv});
  if (auto* pool = dynamic_cast<Pool2d*>(&module)) pools.push_back(pool);
  for (const auto& [name, child] : module.children())
    collect(*child, prefix.empty() ? name : prefix + "." + name, convs, pools);
}

// Every conv and pooling layer's plan at one batch size, captured to be reinstalled per round.
struct CapturedPlans {
  std::vector<std::pair<ConvProblem, ConvLayerPlan>> convs;
  std::vector<std::pair<PoolProblem, PoolLayerPlan>> pools;
};

class SplitBench {
 public:
  SplitBench(const ModelSplitOptions& o, std::ostream& log) : o_(o), log_(log), rng_(1) {
    const Shape example = model_input_shape(o.model);
    model_ = build_model(o.model, ModelOptions{example, kClasses, {}, {}}, rng_);
    collect(*model_, "", convs_, pools_);
    batch_shape_ = {o.batch, example[0], example[1], example[2]};
    own_cache_ = o.tune_cache.empty();
    cache_ = own_cache_ ? std::filesystem::temp_directory_path() /
                              ("tunecnn-bench-depthwise-" + std::to_string(getpid()) + ".yaml")
                        : o.tune_cache;
    fields_ = cpu_fingerprint().fields();
  }
  ~SplitBench() {
    if (!own_cache_) return;
    std::error_code ignored;
    std::filesystem::remove(cache_, ignored);
    std::filesystem::remove(cache_.string() + ".lock", ignored);
  }

  const std::filesystem::path& cache() const { return cache_; }

  // The network planner's plan with `forced` solvers preferred wherever they run.
  CapturedPlans plan(const std::vector<std::string>& forced) {
    TunerOptions options;
    options.only_solvers = forced;
    options.warn = [](std::string_view) {};  // a forced solver that cannot run a layer is expected
    auto tuner = std::make_shared<TunedPlanner>(TunePolicy::cached, cache_, options,
                                                device_id(fields_), fields_);
    NetworkPlanner planner(tuner);
    planner.on_profile = [this](int i, int n, const std::string& key) {
      log_ << "# profiling [" << i << "/" << n << "] " << key << "\n" << std::flush;
    };
    planner.plan(*model_, batch_shape_);
    CapturedPlans plans;
    for (const NamedConv& c : convs_)
      for (const auto& entry : c.conv->plans())
        if (entry.first.mb == o_.batch) plans.convs.push_back(entry);
    for (Pool2d* pool : pools_)
      for (const auto& entry : pool->plans())
        if (entry.first.mb == o_.batch) plans.pools.push_back(entry);
    return plans;
  }

  void install(const CapturedPlans& plans) {
    for (std::size_t i = 0; i < convs_.size() && i < plans.convs.size(); ++i)
      convs_[i].conv->set_plan(plans.convs[i].first, plans.convs[i].second);
    for (std::size_t i = 0; i < pools_.size() && i < plans.pools.size(); ++i)
      pools_[i]->set_plan(plans.pools[i].first, plans.pools[i].second);
  }

  // "dw1 depthwise_direct/NHWC S=..., ..." for the depthwise layers of a plan.
  std::string depthwise_plans(const CapturedPlans& plans) const {
    std::string text;
    for (std::size_t i = 0; i < convs_.size() && i < plans.convs.size(); ++i) {
      if (!convs_[i].conv->depthwise()) continue;
      const ConvPlan& fwd = plans.convs[i].second.fwd;
      text += (text.empty() ? "" : ", ") + convs_[i].name + " " + std::string(fwd.solver->name()) +
              "/" + std::string(to_string(fwd.layout));
      if (!fwd.config.values.empty()) text += " " + fwd.config.str();
    }
    return text;
  }

  // True when the plan runs `solver` on every depthwise layer in the forward direction.
  bool runs_on_depthwise(const CapturedPlans& plans, const std::string& solver) const {
    bool any = false;
    for (std::size_t i = 0; i < convs_.size() && i < plans.convs.size(); ++i) {
      if (!convs_[i].conv->depthwise()) continue;
      any = true;
      if (plans.convs[i].second.fwd.solver->name() != solver) return false;
    }
    return any;
  }

  Module& model() { return *model_; }
  const Shape& batch_shape() const { return batch_shape_; }
  Rng& rng() { return rng_; }

 private:
  const ModelSplitOptions& o_;
  std::ostream& log_;
  Rng rng_;
  std::shared_ptr<Sequential> model_;
  std::vector<NamedConv> convs_;
  std::vector<Pool2d*> pools_;
  Shape batch_shape_;
  bool own_cache_ = true;
  std::filesystem::path cache_;
  std::map<std::string, std::string> fields_;
};

}  // namespace

std::vector<SplitVariant> split_model_step(const ModelSplitOptions& o, std::ostream& log) {
  SplitBench bench(o, log);
  std::vector<SplitVariant> variants{{"tuned", {}, {}, 0, 0, ""}};
  std::vector<CapturedPlans> plans{bench.plan({})};
  variants[0].depthwise_plans = bench.depthwise_plans(plans[0]);
  for (const std::string& solver : o.forced) {
    CapturedPlans forced = bench.plan({solver});
    if (!bench.runs_on_depthwise(forced, solver)) {
      log << "# " << solver << " does not run every depthwise layer of " << o.model << ": skipped\n";
      continue;
    }
    variants.push_back({solver, {}, {}, 0, 0, bench.depthwise_plans(forced)});
    plans.push_back(std::move(forced));
  }

  Sgd sgd(bench.model().parameters(), SgdOptions{0.01, 0.9, 5e-4, false});
  Tensor images = Tensor::empty(bench.batch_shape());
  uniform_fill(images, -1, 1, bench.rng());
  std::vector<std::int32_t> labels(static_cast<std::size_t>(o.batch));
  for (auto& label : labels) label = static_cast<std::int32_t>(bench.rng().next_u64() % kClasses);
  const auto loss = [&](const Variable& logits) { return softmax_cross_entropy(logits, labels); };
  const auto update = [&] { sgd.step(); };

  std::vector<LayerSplit> splits;
  for (std::size_t v = 0; v < variants.size(); ++v) splits.emplace_back(bench.model());
  for (int round = 0; round < o.rounds; ++round) {
    for (std::size_t v = 0; v < variants.size(); ++v) {
      bench.install(plans[v]);
      LayerSplit warm_up(bench.model());  // first touch of this plan's workspaces: not counted
      sgd.zero_grad();
      warm_up.step(Variable(images), loss, update);
      for (int s = 0; s < o.steps; ++s) {
        sgd.zero_grad();
        const double start = now_s();
        splits[v].step(Variable(images), loss, update);
        variants[v].step_s.push_back(now_s() - start);
      }
    }
    log << "# round " << round + 1 << "/" << o.rounds << " done\n" << std::flush;
  }
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const double steps = splits[v].steps();
    for (auto [kind, seconds] : seconds_by_kind(splits[v])) variants[v].kind_s.push_back({kind, seconds / steps});
    variants[v].loss_s = splits[v].loss_s() / steps;
    variants[v].update_s = splits[v].update_s() / steps;
  }
  return variants;
}

}  // namespace tunecnn
