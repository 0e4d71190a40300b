#include "ops/pool/solver.h"

#include "core/error.h"

namespace tunecnn {
namespace {

void check_arg(const Tensor& t, const Shape& shape, const PoolProblem& p, Layout layout, Device device,
               std::string_view solver, const char* role) {
  TUNECNN_CHECK(t.defined() && t.shape() == shape && t.dtype() == p.dt && t.layout() == layout &&
                    t.device() == device,
                solver, " ", role, " ", t.defined() ? t.describe() : "undefined", " does not fit ",
                p.key(), " (needs ", to_string(layout), " on ", to_string(device), ")");
}

}  // namespace

void PoolSolver::check_args(const PoolProblem& p, const PoolArgs& args, Layout layout) const {
  const auto check = [&](const Tensor& t, const Shape& shape, const char* role) {
    check_arg(t, shape, p, layout, device(), name(), role);
  };
  if (reads_src(p)) check(args.src, p.src_shape(), "src");
  if (p.dir == Direction::fwd) {
    check(args.dst, p.dst_shape(), "dst");
  } else {
    check(args.diff_dst, p.dst_shape(), "diff_dst");
    check(args.diff_src, p.src_shape(), "diff_src");
  }
}

}  // namespace tunecnn
