#include "ops/conv/args.h"

namespace tunecnn {
namespace {

void check_arg(const ConvProblem& p, const Tensor& t, const char* role, const Shape& shape,
               Layout layout) {
  TUNECNN_CHECK(t.defined(), "conv ", role, " is undefined for ", p.key());
  TUNECNN_CHECK(t.shape() == shape && t.dtype() == p.dt && t.layout() == layout &&
                    t.device() == p.device,
                "conv ", role, " is ", t.describe(), ", expected ", to_string(p.dt),
                shape_str(shape), " ", to_string(layout), " ", to_string(p.device), " for ", p.key());
}

}  // namespace

bool conv_problem_well_formed(const ConvProblem& p, std::string* why) {
  if (p.mb <= 0 || p.ic <= 0 || p.oc <= 0 || p.ih <= 0 || p.iw <= 0 || p.kh <= 0 || p.kw <= 0)
    return reject(why, "a size is not positive");
  if (p.sh <= 0 || p.sw <= 0 || p.ph < 0 || p.pw < 0)
    return reject(why, "stride must be positive and padding non-negative");
  if (p.g <= 0 || p.ic % p.g != 0 || p.oc % p.g != 0)
    return reject(why, "groups must divide both ic and oc");
  if (p.ih + 2 * p.ph < p.kh || p.iw + 2 * p.pw < p.kw)
    return reject(why, "the kernel is larger than the padded input");
  return true;
}

void check_conv_args(const ConvProblem& p, const ConvArgs& args, Layout layout) {
  switch (p.dir) {
    case Direction::fwd:
      check_arg(p, args.src, "src", p.src_shape(), layout);
      check_arg(p, args.wei, "wei", p.wei_shape(), Layout::NCHW);
      check_arg(p, args.dst, "dst", p.dst_shape(), layout);
      return;
    case Direction::bwd_data:
      check_arg(p, args.diff_dst, "diff_dst", p.dst_shape(), layout);
      check_arg(p, args.wei, "wei", p.wei_shape(), Layout::NCHW);
      check_arg(p, args.diff_src, "diff_src", p.src_shape(), layout);
      return;
    case Direction::bwd_weights:
      check_arg(p, args.src, "src", p.src_shape(), layout);
      check_arg(p, args.diff_dst, "diff_dst", p.dst_shape(), layout);
      check_arg(p, args.diff_wei, "diff_wei", p.wei_shape(), Layout::NCHW);
      return;
  }
}

}  // namespace tunecnn
