#include "ops/conv/verify.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/init.h"
#include "ops/layout/reference.h"

namespace tunecnn {

ConvArgs random_conv_args(const ConvProblem& p, Rng& rng) {
  ConvArgs args;
  args.src = Tensor::empty(p.src_shape(), p.dt);
  args.wei = Tensor::empty(p.wei_shape(), p.dt);
  args.diff_dst = Tensor::empty(p.dst_shape(), p.dt);
  for (Tensor* t : {&args.src, &args.wei, &args.diff_dst}) uniform_fill(*t, -1.0, 1.0, rng);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  args.dst = Tensor::full(p.dst_shape(), nan, p.dt);
  args.diff_src = Tensor::full(p.src_shape(), nan, p.dt);
  args.diff_wei = Tensor::full(p.wei_shape(), nan, p.dt);
  return args;
}

ConvArgs conv_args_in_layout(const ConvArgs& nchw, Layout layout) {
  ConvArgs args;
  args.src = convert_layout_reference(nchw.src, layout);
  args.dst = convert_layout_reference(nchw.dst, layout);
  args.diff_src = convert_layout_reference(nchw.diff_src, layout);
  args.diff_dst = convert_layout_reference(nchw.diff_dst, layout);
  args.wei = nchw.wei.clone();
  args.diff_wei = nchw.diff_wei.clone();
  return args;
}

ConvArgs conv_args_on(const ConvArgs& args, Device device) {
  ConvArgs out;
  for (Tensor ConvArgs::*t : {&ConvArgs::src, &ConvArgs::wei, &ConvArgs::dst, &ConvArgs::diff_src,
                              &ConvArgs::diff_wei, &ConvArgs::diff_dst})
    if ((args.*t).defined()) out.*t = (args.*t).to(device);
  return out;
}

const Tensor& conv_output(const ConvArgs& args, Direction dir) {
  if (dir == Direction::fwd) return args.dst;
  return dir == Direction::bwd_data ? args.diff_src : args.diff_wei;
}

std::string relative_mismatch(const Tensor& got, const Tensor& want, double tol) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return "got " + got.describe() + ", want " + want.describe();
  return dispatch_dtype(want.dtype(), [&]<class T>() -> std::string {
    const T* g = got.data<T>();
    const T* w = want.data<T>();
    double scale = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(double(w[i])));
    const double bound = tol * std::max(scale, 1e-30);
    for (std::int64_t i = 0; i < want.numel(); ++i)
      if (!(std::abs(double(g[i]) - double(w[i])) <= bound))
        return "element " + std::to_string(i) + ": got " + std::to_string(double(g[i])) +
               ", want " + std::to_string(double(w[i])) + " (bound " + std::to_string(bound) + ")";
    return "";
  });
}

}  // namespace tunecnn
