#pragma once
// <Eigen/Core> for the ops, with one copy of the workaround it needs: GCC 12 reports false
// uninitialised reads inside the AVX-512 intrinsics that Eigen's exp, max and double reductions
// use (_mm512_undefined_ps, GCC PR 105593, fixed in GCC 13). The diagnostic is attributed to the
// intrinsics header, so it is silenced only where that header enters; the fixed-size reductions
// of the fused softmax hit the definite form of the same false report.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
