#pragma once
// Eigen for the softmax code (the solvers and the evaluation-time softmax), with one copy of the
// workaround it needs: GCC 12 reports false uninitialised reads inside the AVX-512 intrinsics that
// Eigen's exp and max use (_mm512_undefined_ps, GCC PR 105593, fixed in GCC 13). The diagnostic is
// attributed to the intrinsics header, so it is silenced only where that header enters; the
// fixed-size reductions of the fused solver hit the definite form of the same false report.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

namespace tunecnn {

// One row of logits or gradients as an Eigen array over existing memory.
template <class T>
using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using MutRow = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

}  // namespace tunecnn
