#pragma once
// For the CUDA conv solvers: a problem's sizes as a plain struct that kernels take by value
// (ConvProblem's oh()/ow() are host functions), with the products the kernels index by.
#include <cstdint>

#include "ops/conv/problem.h"

namespace tunecnn {

struct ConvKernelGeometry {
  int mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, icg, ocg, oh, ow;
  explicit ConvKernelGeometry(const ConvProblem& p)
      : mb(p.mb), ic(p.ic), ih(p.ih), iw(p.iw), oc(p.oc), kh(p.kh), kw(p.kw), sh(p.sh), sw(p.sw),
        ph(p.ph), pw(p.pw), icg(p.ic / p.g), ocg(p.oc / p.g), oh(p.oh()), ow(p.ow()) {}
  __host__ __device__ int ihp() const { return ih + 2 * ph; }  // padded input height
  __host__ __device__ std::int64_t ohw() const { return static_cast<std::int64_t>(oh) * ow; }
  __host__ __device__ std::int64_t kd() const {  // one output's taps over all channels: kh*kw*ic
    return static_cast<std::int64_t>(kh) * kw * ic;
  }
  __host__ __device__ std::int64_t image_in() const { return static_cast<std::int64_t>(ic) * ih * iw; }
  __host__ __device__ std::int64_t image_out() const { return static_cast<std::int64_t>(oc) * oh * ow; }
};

}  // namespace tunecnn
