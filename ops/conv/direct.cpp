// Direct convolution: the textbook sums, gathered one output element at a time in every
// direction. It is the reference every other solver is tested against, so it favours obvious
// loops over speed and accumulates in double whatever the dtype.
// Constraints: NCHW on the CPU, f32/f64; any stride, padding and groups. Tunables: none.
// TBB splits only over outputs that tasks write disjointly, so results never depend on
// scheduling. Source: the definition of convolution (e.g. Goodfellow et al., ch. 9).
#include "ops/conv/direct.h"

#include <tbb/parallel_for.h>

#include "ops/conv/args.h"

namespace tunecnn {
namespace {

template <class T>
void direct_fwd(const ConvProblem& p, const T* src, const T* wei, T* dst) {
  const int icg = p.ic / p.g, ocg = p.oc / p.g, oh = p.oh(), ow = p.ow();
  tbb::parallel_for(0, p.mb * p.oc, [&](int task) {
    const int n = task / p.oc, o = task % p.oc, group = o / ocg;
    T* out = dst + static_cast<std::size_t>(task) * oh * ow;
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x) {
        double acc = 0;
        for (int c = 0; c < icg; ++c)
          for (int ki = 0; ki < p.kh; ++ki)
            for (int kj = 0; kj < p.kw; ++kj) {
              const int iy = y * p.sh - p.ph + ki, ix = x * p.sw - p.pw + kj;
              if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
              const int ci = group * icg + c;
              acc += static_cast<double>(
                         src[((static_cast<std::size_t>(n) * p.ic + ci) * p.ih + iy) * p.iw + ix]) *
                     wei[((static_cast<std::size_t>(o) * icg + c) * p.kh + ki) * p.kw + kj];
            }
        out[y * ow + x] = static_cast<T>(acc);
      }
  });
}

// One task per (image, input channel): a gather, so each task owns one diff_src plane.
template <class T>
void direct_bwd_data(const ConvProblem& p, const T* diff_dst, const T* wei, T* diff_src) {
  const int icg = p.ic / p.g, ocg = p.oc / p.g, oh = p.oh(), ow = p.ow();
  tbb::parallel_for(0, p.mb * p.ic, [&](int task) {
    const int n = task / p.ic, ci = task % p.ic, group = ci / icg, c = ci % icg;
    T* out = diff_src + static_cast<std::size_t>(task) * p.ih * p.iw;
    for (int iy = 0; iy < p.ih; ++iy)
      for (int ix = 0; ix < p.iw; ++ix) {
        double acc = 0;
        for (int o = group * ocg; o < (group + 1) * ocg; ++o)
          for (int ki = 0; ki < p.kh; ++ki)
            for (int kj = 0; kj < p.kw; ++kj) {
              const int ty = iy + p.ph - ki, tx = ix + p.pw - kj;
              if (ty < 0 || tx < 0 || ty % p.sh != 0 || tx % p.sw != 0) continue;
              const int y = ty / p.sh, x = tx / p.sw;
              if (y >= oh || x >= ow) continue;
              acc += static_cast<double>(
                         diff_dst[((static_cast<std::size_t>(n) * p.oc + o) * oh + y) * ow + x]) *
                     wei[((static_cast<std::size_t>(o) * icg + c) * p.kh + ki) * p.kw + kj];
            }
        out[iy * p.iw + ix] = static_cast<T>(acc);
      }
  });
}

// One task per (output channel, input channel of its group): it owns kh*kw weights.
template <class T>
void direct_bwd_weights(const ConvProblem& p, const T* src, const T* diff_dst, T* diff_wei) {
  const int icg = p.ic / p.g, ocg = p.oc / p.g, oh = p.oh(), ow = p.ow();
  tbb::parallel_for(0, p.oc * icg, [&](int task) {
    const int o = task / icg, c = task % icg, ci = (o / ocg) * icg + c;
    for (int ki = 0; ki < p.kh; ++ki)
      for (int kj = 0; kj < p.kw; ++kj) {
        double acc = 0;
        for (int n = 0; n < p.mb; ++n)
          for (int y = 0; y < oh; ++y)
            for (int x = 0; x < ow; ++x) {
              const int iy = y * p.sh - p.ph + ki, ix = x * p.sw - p.pw + kj;
              if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
              acc += static_cast<double>(
                         diff_dst[((static_cast<std::size_t>(n) * p.oc + o) * oh + y) * ow + x]) *
                     src[((static_cast<std::size_t>(n) * p.ic + ci) * p.ih + iy) * p.iw + ix];
            }
        diff_wei[(static_cast<std::size_t>(task) * p.kh + ki) * p.kw + kj] = static_cast<T>(acc);
      }
  });
}

}  // namespace

bool DirectConvSolver::applicable(const ConvProblem& problem, std::string* why) const {
  return conv_problem_well_formed(problem, why);
}

void DirectConvSolver::run(const ConvProblem& p, const TuneConfig&, const ConvArgs& args,
                           Workspace) const {
  check_conv_args(p, args, Layout::NCHW);
  dispatch_dtype(p.dt, [&]<class T>() {
    switch (p.dir) {
      case Direction::fwd:
        direct_fwd(p, args.src.data<T>(), args.wei.data<T>(), writable<T>(args.dst));
        return;
      case Direction::bwd_data:
        direct_bwd_data(p, args.diff_dst.data<T>(), args.wei.data<T>(), writable<T>(args.diff_src));
        return;
      case Direction::bwd_weights:
        direct_bwd_weights(p, args.src.data<T>(), args.diff_dst.data<T>(),
                           writable<T>(args.diff_wei));
        return;
    }
  });
}

}  // namespace tunecnn
