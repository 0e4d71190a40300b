#pragma once
// The portable SIMD pieces the direct kernels share (direct_chwn, depthwise_direct): GCC/Clang
// vector extensions, so one source compiles to AVX2 or AVX-512 by -march, with no intrinsics.
#include <cstring>

namespace tunecnn::simd {

#if defined(__AVX512F__)
inline constexpr int kVectorBytes = 64;
#else
inline constexpr int kVectorBytes = 32;
#endif

// L lanes of T; arithmetic with a scalar broadcasts it.
template <class T, int L>
struct VecOf {
  typedef T type __attribute__((vector_size(L * sizeof(T))));
};
template <class T, int L>
using Vec = typename VecOf<T, L>::type;

// Fixed-size memcpy compiles to one unaligned vector load or store.
template <class T, int L>
Vec<T, L> load(const T* p) {
  Vec<T, L> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <class T, int L>
void store(T* p, const Vec<T, L>& v) {
  std::memcpy(p, &v, sizeof(v));
}
template <class T, int L>
T lane_sum(const Vec<T, L>& v) {
  T sum = 0;
  for (int i = 0; i < L; ++i) sum += v[i];
  return sum;
}

}  // namespace tunecnn::simd
