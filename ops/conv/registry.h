#pragma once
// The ordered list of CPU conv solvers. Order is the preference when nothing has been tuned; the
// direct reference is last and always applicable.
#include <span>
#include <string>
#include <string_view>

#include "ops/conv/solver.h"

namespace tunecnn {

std::span<const ConvSolver* const> cpu_conv_solvers();
const ConvSolver& direct_conv_solver();
const ConvSolver* find_conv_solver(std::string_view name);  // nullptr when unknown
std::string conv_solver_names();  // "im2col_gemm, mec, ...", for messages

}  // namespace tunecnn
