#pragma once
// Debian's oneDNN runs on OpenMP (libgomp), whose threads spin after each parallel region before
// they sleep: about 300000 pause instructions, milliseconds on AMD Zen, spent on the cores our TBB
// work runs on next. Measured with `bench threads` (docs/BENCHMARKS.md): AlexNet's layers in
// im2col_gemm 15-45% slower right after a oneDNN call, and oneDNN itself up to 5x slower when
// another process takes a core; with OMP_WAIT_POLICY=PASSIVE neither slows the other. libgomp
// reads the variable once, when it loads, before main runs; so each program sets it and
// re-executes itself, once, at the top of main. A value the user set is left alone.
namespace tunecnn {

// The OMP_WAIT_POLICY a program of this build wants: "PASSIVE" with oneDNN, nullptr without.
const char* wanted_openmp_wait_policy();

// Sets OMP_WAIT_POLICY and re-executes /proc/self/exe with the same arguments when the variable is
// unset and this build has oneDNN; returns (doing nothing) otherwise, or when the exec fails.
void use_passive_openmp_threads(char** argv);

}  // namespace tunecnn
