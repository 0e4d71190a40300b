#pragma once
// The small value types every layer shares: element type, device and 4-D memory layout.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tunecnn {

enum class DType : std::uint8_t { f32, f64 };
enum class Device : std::uint8_t { cpu, cuda };
// Memory order of a 4-D activation. A tensor's shape is always the logical (N, C, H, W);
// the layout says in which order those dimensions sit in memory.
enum class Layout : std::uint8_t { NCHW, CHWN, NHWC };

using Shape = std::vector<std::int64_t>;

std::size_t dtype_size(DType dtype);
std::string_view to_string(DType dtype);
std::string_view to_string(Device device);
std::string_view to_string(Layout layout);
Layout parse_layout(std::string_view text);  // throws Error on an unknown name
Device parse_device(std::string_view text);  // "cpu" or "cuda"; throws Error otherwise
std::string shape_str(const Shape& shape);    // "[64, 1, 28, 28]"
std::int64_t shape_numel(const Shape& shape);

// The dimensions of a logical NCHW shape in the order they are stored for `layout`.
Shape physical_shape(const Shape& nchw, Layout layout);

}  // namespace tunecnn
