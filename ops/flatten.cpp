#include "ops/flatten.h"

#include "ops/layout/to_layout.h"

namespace tunecnn {

Variable flatten(const Variable& input) {
  // Features are flattened in NCHW order, whatever layout the layer before ran in.
  const Variable x = to_layout(input, Layout::NCHW);
  const Tensor& t = x.data();
  TUNECNN_CHECK(t.ndim() >= 2, "flatten expects [batch, ...] with at least 2 dimensions, got ",
                shape_str(t.shape()));
  const std::int64_t batch = t.dim(0);
  const std::int64_t rest = shape_numel(Shape(t.shape().begin() + 1, t.shape().end()));
  // Only the shape is needed to route the gradient back: the data is not kept alive.
  auto backward = [shape = t.shape()](std::vector<Variable>& in, const Tensor& dy) {
    in[0].add_grad(dy.reshape(shape));
  };
  return Variable(t.reshape({batch, rest}), {x}, backward);
}

}  // namespace tunecnn
