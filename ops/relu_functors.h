#pragma once
// ReLU's two elementwise rules as Eigen functors with packet versions, for relu.cpp and the ReLU
// fused into batch norm. Eigen 3.4 does not vectorise select(), so `(x < 0).select(0, x)` runs
// one element at a time: about a third of memory speed at one thread, and inside batch norm's
// passes it made the fused op slower than the two ops. These compare and mask whole packets.
// Both keep NaN visible (a comparison with NaN is false), so a diverging run is not masked.
#include "ops/eigen_core.h"

namespace tunecnn {

// y = x clipped to [0, top]; top infinite for a plain ReLU.
template <class T>
struct ReluClip {
  T top;
  T operator()(const T& x) const { return x < T(0) ? T(0) : (x > top ? top : x); }
  template <class Packet>
  Packet packetOp(const Packet& x) const {
    using namespace Eigen::internal;
    const Packet zero = pzero(x), cap = pset1<Packet>(top);
    return pselect(pcmp_lt(x, zero), zero, pselect(pcmp_lt(cap, x), cap, x));
  }
};

// dx = dy where 0 < z < top, else 0: the gradient through the ReLU, z its input or its output
// (the same set, as relu.h says).
template <class T>
struct ReluGate {
  T top;
  T operator()(const T& dy, const T& z) const { return z > T(0) && z < top ? dy : T(0); }
  template <class Packet>
  Packet packetOp(const Packet& dy, const Packet& z) const {
    using namespace Eigen::internal;
    const Packet inside = pand(pcmp_lt(pzero(z), z), pcmp_lt(z, pset1<Packet>(top)));
    return pand(inside, dy);
  }
};

}  // namespace tunecnn

namespace Eigen::internal {

template <class T>
struct functor_traits<tunecnn::ReluClip<T>> {
  enum { Cost = 3 * NumTraits<T>::AddCost, PacketAccess = packet_traits<T>::HasCmp };
};

template <class T>
struct functor_traits<tunecnn::ReluGate<T>> {
  enum { Cost = 3 * NumTraits<T>::AddCost, PacketAccess = packet_traits<T>::HasCmp };
};

}  // namespace Eigen::internal
