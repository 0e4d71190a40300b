#include "ops/layout/to_layout.h"

#include <algorithm>

#include "core/allocator.h"
#include "ops/layout/transform.h"

namespace tunecnn {

Variable to_layout(const Variable& x, Layout layout) {
  const Tensor& t = x.data();
  if (t.layout() == layout) return x;
  auto backward = [from = t.layout()](std::vector<Variable>& in, const Tensor& dy) {
    const MemoryUseScope counted_as(MemoryUse::layout_copies);
    in[0].add_grad(convert_layout(dy, from));
  };
  const MemoryUseScope counted_as(MemoryUse::layout_copies);
  return Variable(convert_layout(t, layout), {x}, backward);
}

bool contains_layout(const std::vector<Layout>& layouts, Layout layout) {
  return std::find(layouts.begin(), layouts.end(), layout) != layouts.end();
}

}  // namespace tunecnn
