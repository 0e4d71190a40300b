#include "ops/softmax/gpu_rows.h"

#include "core/cuda_runtime.h"
#include "ops/softmax/problem.h"

namespace tunecnn {

std::unique_ptr<Storage> labels_on_gpu(const std::vector<std::int32_t>& labels) {
  const std::size_t bytes = labels.size() * sizeof(std::int32_t);
  auto device_labels = std::make_unique<Storage>(bytes, Device::cuda);
  copy_bytes(device_labels->data(), Device::cuda, labels.data(), Device::cpu, bytes);
  return device_labels;
}

double mean_row_loss_on_gpu(const Tensor& row_loss) {
  const Tensor host = row_loss.to(Device::cpu);
  const double* loss = host.data<double>();
  return mean_row_loss(std::vector<double>(loss, loss + host.numel()));
}

}  // namespace tunecnn
