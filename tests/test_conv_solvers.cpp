// The solver suite: every CPU conv solver x every config x every layout it runs in x every
// direction x every shape (hand-written edge cases plus every layer of models/conv_layers.txt,
// scaled down) against the direct reference; then the workspace contract for each of them.
// Cases are generated only where the solver is applicable, so nothing here skips.
#include <gtest/gtest.h>

#include "core/allocator.h"
#include "ops/conv/registry.h"
#include "ops/layout/reference.h"
#include "tests/support/conv_testing.h"

namespace tunecnn {
namespace {

using namespace tunecnn::testing;

struct SolverCase {
  const ConvSolver* solver;
  ConvShape shape;
  Direction dir;
  DType dt;
  ConvProblem problem() const { return shape.with(dir, dt); }
};

void PrintTo(const SolverCase& c, std::ostream* os) { *os << c.problem().key(); }

std::string case_name(const ::testing::TestParamInfo<SolverCase>& info) {
  const SolverCase& c = info.param;
  return std::string(c.solver->name()) + "_" + std::string(to_string(c.dir)) + "_" +
         c.shape.name + "_" + std::string(to_string(c.dt));
}

void add_if_applicable(std::vector<SolverCase>& cases, const ConvSolver* solver,
                       const ConvShape& shape, DType dt) {
  for (Direction dir : kAllDirections)
    if (solver->applicable(shape.with(dir, dt), nullptr)) cases.push_back({solver, shape, dir, dt});
}

// f64 on the edge cases checks the algorithms to 1e-12; the model layers run in f32.
std::vector<SolverCase> all_cases() {
  std::vector<SolverCase> cases;
  for (const ConvSolver* solver : cpu_conv_solvers()) {
    if (solver == &direct_conv_solver()) continue;
    for (const ConvShape& shape : edge_case_shapes()) {
      add_if_applicable(cases, solver, shape, DType::f32);
      add_if_applicable(cases, solver, shape, DType::f64);
    }
    for (const ConvShape& shape : model_layer_shapes())
      add_if_applicable(cases, solver, shape, DType::f32);
  }
  return cases;
}

class ConvSolverTest : public ::testing::TestWithParam<SolverCase> {};

TEST_P(ConvSolverTest, MatchesDirectReferenceInEveryConfigAndLayout) {
  const SolverCase& c = GetParam();
  const ConvProblem p = c.problem();
  const ConvArgs args = make_conv_args(p, 42);
  const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, args, Layout::NCHW);
  const double tol = p.dt == DType::f64 ? 1e-12 : 1e-4;
  const std::vector<Layout> layouts = c.solver->layouts(p);
  const std::vector<TuneConfig> configs = c.solver->configs(p);
  ASSERT_FALSE(layouts.empty());
  ASSERT_FALSE(configs.empty());
  for (Layout layout : layouts)
    for (const TuneConfig& config : configs)
      EXPECT_TRUE(close_relative(run_in_layout({c.solver, config}, p, args, layout), want, tol))
          << c.solver->name() << " [" << config.str() << "] " << to_string(layout) << " "
          << p.key();
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, ConvSolverTest, ::testing::ValuesIn(all_cases()), case_name);

// The workspace contract, per config: what workspace_bytes() promises is what run_conv
// allocates, and the solver uses that much and no more.
std::vector<SolverCase> workspace_cases() {
  std::vector<SolverCase> cases;
  const auto& edges = edge_case_shapes();
  const auto& layers = model_layer_shapes();
  std::vector<ConvShape> shapes = {edges[0], edges[2], edges[4], edges[8], edges[11],
                                   edges[17], layers[1], layers[8], layers[13]};
  // Depthwise: both kernel sizes and strides of depthwise_direct, several sizes of diagonal.
  for (const ConvShape& shape : edges)
    for (const char* name : {"depthwise", "dw_s2_odd", "dw_k5_s2", "dw_c72"})
      if (shape.name == name) shapes.push_back(shape);
  for (const ConvSolver* solver : cpu_conv_solvers())
    for (const ConvShape& shape : shapes) add_if_applicable(cases, solver, shape, DType::f32);
  return cases;
}

class ConvWorkspaceTest : public ::testing::TestWithParam<SolverCase> {};

// The args of a call in the solver's first layout.
ConvArgs args_in_layout(const ConvProblem& p, Layout layout) {
  ConvArgs args = make_conv_args(p, 3);
  for (Tensor* t : {&args.src, &args.dst, &args.diff_src, &args.diff_dst})
    *t = convert_layout_reference(*t, layout);
  return args;
}

TEST_P(ConvWorkspaceTest, PeakIncreaseIsWorkspaceBytes) {
  const SolverCase& c = GetParam();
  const ConvProblem p = c.problem();
  const ConvArgs args = args_in_layout(p, c.solver->layouts(p).front());
  for (const TuneConfig& config : c.solver->configs(p)) {
    const std::size_t bytes = c.solver->workspace_bytes(p, config);
    Allocator& alloc = allocator_for(Device::cpu);
    alloc.reset_peak();
    const std::size_t before = alloc.stats().current_bytes;
    const std::size_t workspaces = static_cast<std::size_t>(MemoryUse::workspaces);
    const std::size_t workspaces_before = alloc.stats().current_by_use[workspaces];
    run_conv({c.solver, config}, p, args);
    // run_conv always allocates one block, of at least one byte, and counts it as a workspace.
    EXPECT_EQ(alloc.stats().peak_bytes - before, Allocator::block_size(bytes))
        << "[" << config.str() << "] " << p.key();
    EXPECT_EQ(alloc.stats().at_peak_by_use[workspaces] - workspaces_before, Allocator::block_size(bytes))
        << "[" << config.str() << "] " << p.key();
  }
}

// oneDNN books its scratchpad for the most threads a call may use and pads each buffer to its
// own alignment; how much of it a call writes depends on how the work splits. Its workspace is
// checked for writes past the end only; ours must also have no unused tail beyond the padding.
bool books_an_upper_bound(const ConvSolver& solver) {
  return solver.name().starts_with("onednn");
}

TEST_P(ConvWorkspaceTest, UsesExactlyItsWorkspace) {
  const SolverCase& c = GetParam();
  const ConvProblem p = c.problem();
  const ConvArgs args = args_in_layout(p, c.solver->layouts(p).front());
  for (const TuneConfig& config : c.solver->configs(p)) {
    const std::size_t bytes = c.solver->workspace_bytes(p, config);
    constexpr std::size_t kGuard = 256;
    constexpr unsigned char kSentinel = 0xA5;
    // The workspace starts on a cache line, as the allocator gives it.
    std::vector<unsigned char> buffer(kWorkspaceAlignment + bytes + kGuard, kSentinel);
    const std::size_t start = kWorkspaceAlignment - reinterpret_cast<std::uintptr_t>(buffer.data()) % kWorkspaceAlignment;
    unsigned char* workspace = buffer.data() + start;
    c.solver->run(p, config, args, Workspace{bytes ? workspace : nullptr, bytes});
    for (std::size_t i = bytes; i < bytes + kGuard; ++i)
      ASSERT_EQ(workspace[i], kSentinel) << "wrote past its workspace at byte " << i << " ["
                                         << config.str() << "] " << p.key();
    if (books_an_upper_bound(*c.solver)) continue;
    std::size_t used = bytes;
    while (used > 0 && workspace[used - 1] == kSentinel) --used;
    // Slices are padded to a cache line; more unused tail than that means an overestimate.
    EXPECT_LT(bytes - used, kWorkspaceAlignment)
        << "workspace_bytes " << bytes << " but used " << used << " [" << config.str() << "] " << p.key();
  }
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, ConvWorkspaceTest, ::testing::ValuesIn(workspace_cases()),
                         case_name);

}  // namespace
}  // namespace tunecnn
