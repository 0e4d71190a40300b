#include "ops/pool/onednn.h"

#include <dnnl.hpp>
#include <memory>
#include <optional>
#include <string>

#include "core/allocator.h"
#include "core/error.h"
#include "ops/onednn_runtime.h"

namespace tunecnn {
namespace {

using dnnl::memory;

dnnl::algorithm algorithm_of(const PoolProblem& p) {
  if (p.kind == PoolKind::max) return dnnl::algorithm::pooling_max;
  return p.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                             : dnnl::algorithm::pooling_avg_exclude_padding;
}

memory::desc plain(const Shape& shape, Layout layout) {
  return {memory::dims(shape.begin(), shape.end()), memory::data_type::f32,
          layout == Layout::NHWC ? memory::format_tag::nhwc : memory::format_tag::nchw};
}

struct Window {
  memory::dims strides, kernel, pad_l, pad_r;
};

Window window_of(const PoolProblem& p) {
  return {{p.sh, p.sw},
          {p.kh, p.kw},
          {p.ph, p.pw},
          {onednn_pad_after(p.ih, p.oh(), p.kh, p.sh, p.ph), onednn_pad_after(p.iw, p.ow(), p.kw, p.sw, p.pw)}};
}

dnnl::pooling_forward::desc forward_desc(const PoolProblem& p, Layout layout) {
  const Window w = window_of(p);
  return {dnnl::prop_kind::forward_training, algorithm_of(p), plain(p.src_shape(), layout),
          plain(p.dst_shape(), layout), w.strides, w.kernel, w.pad_l, w.pad_r};
}

// The primitives of one problem and layout: the forward, and for bwd_data the backward too.
struct Primitives {
  dnnl::pooling_forward::primitive_desc forward_pd;
  dnnl::pooling_forward forward;
  std::optional<dnnl::pooling_backward> backward;
};

std::unique_ptr<Primitives> build(const PoolProblem& p, Layout layout) {
  const dnnl::pooling_forward::desc fwd = forward_desc(p, layout);
  dnnl::pooling_forward::primitive_desc fwd_pd(fwd, onednn_cpu_engine());
  auto built = std::make_unique<Primitives>(Primitives{fwd_pd, dnnl::pooling_forward(fwd_pd), std::nullopt});
  if (p.dir == Direction::bwd_data) {
    const Window w = window_of(p);
    const dnnl::pooling_backward::desc bwd(algorithm_of(p), plain(p.src_shape(), layout), plain(p.dst_shape(), layout),
                                           w.strides, w.kernel, w.pad_l, w.pad_r);
    built->backward.emplace(dnnl::pooling_backward::primitive_desc(bwd, onednn_cpu_engine(), fwd_pd));
  }
  return built;
}

// Built once per problem and layout for the life of the process.
const Primitives& primitives(const PoolProblem& p, Layout layout) {
  static OneDnnPrimitiveCache<Primitives> cache;
  return cache.get(p.key() + " " + std::string(to_string(layout)), [&] { return build(p, layout); },
                   "oneDNN cannot pool " + p.key() + " in " + std::string(to_string(layout)));
}

// Scratch bytes from our allocator (so peaks count them), given back at the end of the call.
class Scratch {
 public:
  explicit Scratch(std::size_t bytes)
      : bytes_(bytes), data_(allocator_for(Device::cpu).allocate(bytes, MemoryUse::workspaces)) {}
  ~Scratch() { allocator_for(Device::cpu).deallocate(data_, bytes_, MemoryUse::workspaces); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* data() const { return data_; }

 private:
  std::size_t bytes_;
  void* data_;
};

void forward(const PoolProblem& p, Layout layout, const Primitives& prims, const PoolArgs& args,
             dnnl::stream& stream) {
  const memory::desc ws_desc = prims.forward_pd.workspace_desc();
  Scratch workspace(std::max<std::size_t>(1, ws_desc.get_size()));
  prims.forward.execute(stream, {{DNNL_ARG_SRC, memory(plain(p.src_shape(), layout), onednn_cpu_engine(), args.src.raw_data())},
                                 {DNNL_ARG_DST, memory(plain(p.dst_shape(), layout), onednn_cpu_engine(), args.dst.raw_data())},
                                 {DNNL_ARG_WORKSPACE, memory(ws_desc, onednn_cpu_engine(), workspace.data())}});
  stream.wait();
}

// Max: the forward again, into scratch, for the argmax workspace; average needs none.
void backward(const PoolProblem& p, Layout layout, const Primitives& prims, const PoolArgs& args,
              dnnl::stream& stream) {
  const dnnl::engine& engine = onednn_cpu_engine();
  const memory::desc ws_desc = prims.forward_pd.workspace_desc(), dst_desc = plain(p.dst_shape(), layout);
  Scratch workspace(std::max<std::size_t>(1, ws_desc.get_size()));
  const memory ws(ws_desc, engine, workspace.data());
  std::optional<Scratch> dst;
  if (p.kind == PoolKind::max) {
    dst.emplace(dst_desc.get_size());
    prims.forward.execute(stream, {{DNNL_ARG_SRC, memory(plain(p.src_shape(), layout), engine, args.src.raw_data())},
                                   {DNNL_ARG_DST, memory(dst_desc, engine, dst->data())},
                                   {DNNL_ARG_WORKSPACE, ws}});
  }
  prims.backward->execute(stream, {{DNNL_ARG_DIFF_DST, memory(dst_desc, engine, args.diff_dst.raw_data())},
                                   {DNNL_ARG_DIFF_SRC, memory(plain(p.src_shape(), layout), engine, args.diff_src.raw_data())},
                                   {DNNL_ARG_WORKSPACE, ws}});
  stream.wait();
}

}  // namespace

bool OneDnnPoolSolver::applicable(const PoolProblem& p, std::string* why) const {
  if (!runs_here(p, why)) return false;
  if (p.dir == Direction::bwd_weights) return reject(why, "pooling has no weights");
  if (p.dt != DType::f32) return reject(why, "oneDNN's pooling runs f32 here");
  return true;
}

void OneDnnPoolSolver::run(const PoolProblem& p, const TuneConfig&, const PoolArgs& args) const {
  const Layout layout = (p.dir == Direction::fwd ? args.src : args.diff_dst).layout();
  TUNECNN_CHECK(layout == Layout::NCHW || layout == Layout::NHWC, "pool_onednn runs NCHW or NHWC, got ",
                to_string(layout), " for ", p.key());
  check_args(p, args, layout);
  const Primitives& prims = primitives(p, layout);
  match_onednn_threads_to_ours();
  dnnl::stream stream(onednn_cpu_engine());
  if (p.dir == Direction::fwd)
    forward(p, layout, prims, args, stream);
  else
    backward(p, layout, prims, args, stream);
}

}  // namespace tunecnn
