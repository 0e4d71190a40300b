#pragma once
// The layout transform as an autograd op: where two consecutive layers run in different layouts,
// the later one calls to_layout on its input. Backward transforms the gradient back.
#include "core/variable.h"

namespace tunecnn {

// x itself when it is already in `layout`; otherwise a transformed copy (ops/layout/transform.h).
Variable to_layout(const Variable& x, Layout layout);

// Whether `layout` is in `layouts`.
bool contains_layout(const std::vector<Layout>& layouts, Layout layout);

}  // namespace tunecnn
