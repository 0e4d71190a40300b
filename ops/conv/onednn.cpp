// A config is {blocked, winograd, impl}: activations in the layer's layout (0) or reordered to
// the implementation's format and back inside the call (1); the direct (0) or Winograd (1)
// algorithm; and which of oneDNN's implementations for those, counted in oneDNN's order without
// its reference code. Implementation numbers depend on the ISA and the oneDNN version, both of
// which the tuning cache's fingerprint keeps apart; an unknown one is refused with a message.
// Constraints: CPU, f32, any stride, padding and groups (depthwise included).
// Deterministic: oneDNN's CPU convolutions give the same bits run to run at a fixed thread count
// (tests/test_conv_onednn.cpp checks every config).
#include "ops/conv/onednn.h"

#include "ops/conv/args.h"
#include "ops/conv/onednn_primitive.h"

namespace tunecnn {
namespace {

OneDnnChoice choice_of(const TuneConfig& config) {
  return {config.get("blocked", 0) != 0, config.get("winograd", 0) != 0, config.get("impl", 0)};
}

}  // namespace

std::string_view OneDnnSolver::name() const {
  return layout_ == Layout::NHWC ? "onednn_nhwc" : "onednn_nchw";
}

bool OneDnnSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.device != Device::cpu) return reject(why, "oneDNN runs on the CPU");
  if (p.dt != DType::f32) return reject(why, "oneDNN's convolution runs f32 here");
  if (configs(p).empty()) return reject(why, "oneDNN offers only its reference code for this problem");
  return true;
}

std::vector<TuneConfig> OneDnnSolver::configs(const ConvProblem& p) const {
  std::vector<TuneConfig> out;
  for (const int blocked : {0, 1}) {
    for (const int winograd : {0, 1}) {
      const std::size_t count = onednn_implementations(p, layout_, blocked, winograd).size();
      for (std::size_t impl = 0; impl < count; ++impl)
        out.push_back({{{"blocked", blocked}, {"winograd", winograd}, {"impl", static_cast<int>(impl)}}});
    }
  }
  return out;
}

std::size_t OneDnnSolver::workspace_bytes(const ConvProblem& p, const TuneConfig& config) const {
  return onednn_workspace_bytes(p, layout_, choice_of(config));
}

std::string OneDnnSolver::describe(const ConvProblem& p, const TuneConfig& config) const {
  const OneDnnChoice c = choice_of(config);
  const std::vector<std::string> names = onednn_implementations(p, layout_, c.blocked, c.winograd);
  const bool known = c.impl >= 0 && c.impl < static_cast<int>(names.size());
  return config.str() + " (" + (known ? names[c.impl] : "not offered here") + ")";
}

void OneDnnSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                       Workspace workspace) const {
  run_onednn(p, layout_, choice_of(config), args, workspace);
}

}  // namespace tunecnn
