#include "ops/conv/onednn_primitive.h"

#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "ops/conv/args.h"
#include "ops/onednn_runtime.h"

namespace tunecnn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Scratch memory comes from the caller's workspace (our allocator), so workspace_bytes() is exact.
dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The primitive descriptors as they are asked for: activations in the layer's plain layout or
// `any` (the implementation picks), weights always `any`.
struct Request {
  memory::desc src, wei, dst;
  dnnl::algorithm algorithm;
  memory::dims strides, pad_l, pad_r;
};

memory::desc activation(const Shape& shape, Layout layout, bool any) {
  const Tag tag = any ? Tag::any : layout == Layout::NHWC ? Tag::nhwc : Tag::nchw;
  return {memory::dims(shape.begin(), shape.end()), memory::data_type::f32, tag};
}

// Our [oc, ic/g, kh, kw] weights; grouped, oneDNN sees the same bytes as [g, oc/g, ic/g, kh, kw].
memory::desc plain_weights(const ConvProblem& p) {
  if (p.g == 1) return {{p.oc, p.ic, p.kh, p.kw}, memory::data_type::f32, Tag::oihw};
  return {{p.g, p.oc / p.g, p.ic / p.g, p.kh, p.kw}, memory::data_type::f32, Tag::goihw};
}

Request request(const ConvProblem& p, Layout layout, bool blocked, bool winograd) {
  const memory::desc wei = plain_weights(p);
  return {activation(p.src_shape(), layout, blocked),
          memory::desc(wei.dims(), memory::data_type::f32, Tag::any),
          activation(p.dst_shape(), layout, blocked),
          winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct,
          {p.sh, p.sw},
          {p.ph, p.pw},
          {onednn_pad_after(p.ih, p.oh(), p.kh, p.sh, p.ph), onednn_pad_after(p.iw, p.ow(), p.kw, p.sw, p.pw)}};
}

dnnl::convolution_forward::desc forward_desc(const Request& r) {
  return {dnnl::prop_kind::forward_training, r.algorithm, r.src, r.wei, r.dst, r.strides, r.pad_l, r.pad_r};
}

// Calls `visit` with the primitive descriptor of the problem's direction (its first
// implementation). Throws dnnl::error when oneDNN has none for the request. The descriptor's
// iterator points at the op descriptor and the forward hint, so both live in this frame while
// `visit` moves it along.
template <class Visit>
auto with_primitive_desc(const ConvProblem& p, const Request& r, Visit&& visit) {
  const dnnl::convolution_forward::desc forward = forward_desc(r);
  if (p.dir == Direction::fwd) {
    dnnl::convolution_forward::primitive_desc pd(forward, user_scratchpad(), onednn_cpu_engine());
    return visit(pd);
  }
  const dnnl::convolution_forward::primitive_desc hint(forward, user_scratchpad(), onednn_cpu_engine());
  if (p.dir == Direction::bwd_data) {
    const dnnl::convolution_backward_data::desc desc(r.algorithm, r.src, r.wei, r.dst, r.strides,
                                                     r.pad_l, r.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), onednn_cpu_engine(), hint);
    return visit(pd);
  }
  const dnnl::convolution_backward_weights::desc desc(r.algorithm, r.src, r.wei, r.dst, r.strides,
                                                      r.pad_l, r.pad_r);
  dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), onednn_cpu_engine(), hint);
  return visit(pd);
}

bool is_reference(const dnnl::primitive_desc_base& pd) {
  return std::string_view(pd.impl_info_str()).starts_with("ref");
}

// Whether `pd` is at an implementation to offer: not reference code, and not one already seen.
// The iterator lists some twice once a primitive of the same problem is in oneDNN's primitive
// cache (Debian's 2.6: the cached one first, then all of them), so implementations are counted
// by name.
bool is_new_implementation(const dnnl::primitive_desc_base& pd, std::vector<std::string>& seen) {
  const std::string name = pd.impl_info_str();
  if (is_reference(pd) || std::find(seen.begin(), seen.end(), name) != seen.end()) return false;
  seen.push_back(name);
  return true;
}

// Moves `pd` to its `impl`-th implementation to offer; false when it has fewer.
template <class PrimitiveDesc>
bool seek_implementation(PrimitiveDesc& pd, int impl) {
  std::vector<std::string> seen;
  do {
    if (is_new_implementation(pd, seen) && static_cast<int>(seen.size()) == impl + 1) return true;
  } while (pd.next_impl());
  return false;
}

// An operand the primitive reads or writes in another format than the caller's tensor: it lives
// in the workspace and is reordered from (an input) or to (an output) the caller's tensor.
struct Staged {
  int arg;
  memory::desc inner;
  bool output;
  std::size_t offset;
  dnnl::reorder reorder;
};

// The operands of one direction: oneDNN's argument, the tensor of ConvArgs, whether written, and
// (once built) the caller's format of it.
struct Operand {
  int arg;
  const Tensor ConvArgs::*tensor;
  bool output;
  memory::desc plain = {};
};

std::vector<Operand> operands(Direction dir) {
  switch (dir) {
    case Direction::fwd:
      return {{DNNL_ARG_SRC, &ConvArgs::src, false}, {DNNL_ARG_WEIGHTS, &ConvArgs::wei, false},
              {DNNL_ARG_DST, &ConvArgs::dst, true}};
    case Direction::bwd_data:
      return {{DNNL_ARG_DIFF_DST, &ConvArgs::diff_dst, false}, {DNNL_ARG_WEIGHTS, &ConvArgs::wei, false},
              {DNNL_ARG_DIFF_SRC, &ConvArgs::diff_src, true}};
    case Direction::bwd_weights:
      return {{DNNL_ARG_SRC, &ConvArgs::src, false}, {DNNL_ARG_DIFF_DST, &ConvArgs::diff_dst, false},
              {DNNL_ARG_DIFF_WEIGHTS, &ConvArgs::diff_wei, true}};
  }
  throw Error("unknown conv direction");
}

// The caller's format of each oneDNN argument.
memory::desc plain_desc(int arg, const ConvProblem& p, Layout layout) {
  switch (arg) {
    case DNNL_ARG_SRC:
    case DNNL_ARG_DIFF_SRC:
      return activation(p.src_shape(), layout, false);
    case DNNL_ARG_DST:
    case DNNL_ARG_DIFF_DST:
      return activation(p.dst_shape(), layout, false);
    default:
      return plain_weights(p);
  }
}

// A primitive ready to run, with its staged operands and the workspace they take.
struct Built {
  dnnl::primitive primitive;
  std::vector<Operand> operands;
  std::vector<Staged> staged;
  std::size_t scratchpad_bytes = 0;  // the largest of the primitive's and the reorders'
  std::size_t workspace_bytes = 0;
};

template <class PrimitiveDesc>
std::unique_ptr<Built> build(const ConvProblem& p, Layout layout, PrimitiveDesc& pd) {
  auto built = std::make_unique<Built>();
  built->primitive = dnnl::primitive(pd);
  built->operands = operands(p.dir);
  built->scratchpad_bytes = pd.scratchpad_desc().get_size();
  for (Operand& op : built->operands) {
    op.plain = plain_desc(op.arg, p, layout);
    const memory::desc inner = pd.query_md(dnnl::query::exec_arg_md, op.arg);
    if (op.plain == inner) continue;
    const dnnl::engine& engine = onednn_cpu_engine();
    const dnnl::reorder::primitive_desc rpd =
        op.output ? dnnl::reorder::primitive_desc(engine, inner, engine, op.plain, user_scratchpad())
                  : dnnl::reorder::primitive_desc(engine, op.plain, engine, inner, user_scratchpad());
    built->scratchpad_bytes = std::max(built->scratchpad_bytes, rpd.scratchpad_desc().get_size());
    built->staged.push_back({op.arg, inner, op.output, 0, dnnl::reorder(rpd)});
  }
  std::size_t offset = align_workspace(built->scratchpad_bytes);
  for (Staged& s : built->staged) {
    s.offset = offset;
    offset += align_workspace(s.inner.get_size());
  }
  built->workspace_bytes = offset;
  return built;
}

std::string cache_key(const ConvProblem& p, Layout layout, const OneDnnChoice& c) {
  return p.key() + " " + std::string(to_string(layout)) + (c.blocked ? " blocked" : " plain") +
         (c.winograd ? " winograd " : " direct ") + std::to_string(c.impl);
}

std::unique_ptr<Built> build(const ConvProblem& p, Layout layout, const OneDnnChoice& c) {
  return with_primitive_desc(p, request(p, layout, c.blocked, c.winograd), [&](auto& pd) {
    TUNECNN_CHECK(seek_implementation(pd, c.impl), "oneDNN offers no implementation #", c.impl, " for ",
                  p.key(), " in ", to_string(layout), ": retune (autotune profile --tune full)");
    return build(p, layout, pd);
  });
}

// Every primitive built in this process, by problem, layout and choice.
OneDnnPrimitiveCache<Built> primitives;

const Built& built(const ConvProblem& p, Layout layout, const OneDnnChoice& c) {
  return primitives.get(cache_key(p, layout, c), [&] { return build(p, layout, c); },
                        "oneDNN cannot run " + p.key() + " in " + std::string(to_string(layout)));
}

void* tensor_data(const ConvArgs& args, const Operand& op) {
  return (args.*op.tensor).raw_data();
}

std::vector<std::string> list_implementations(const ConvProblem& problem, Layout layout, bool blocked,
                                              bool winograd) {
  std::vector<std::string> names;
  try {
    with_primitive_desc(problem, request(problem, layout, blocked, winograd), [&](auto& pd) {
      do {
        is_new_implementation(pd, names);
      } while (pd.next_impl());
      return 0;
    });
  } catch (const dnnl::error&) {
    // No implementation at all for this request (Winograd on a 5x5 kernel, say).
  }
  return names;
}

// The lists made in this process, by request and OpenMP thread count: oneDNN's implementations
// read the thread count when they decide whether they apply.
class ListedImplementations {
 public:
  std::vector<std::string> get(const ConvProblem& p, Layout layout, bool blocked, bool winograd) {
    const std::string key = cache_key(p, layout, {blocked, winograd, 0}) + " threads" +
                            std::to_string(omp_get_max_threads());
    {
      std::lock_guard lock(mutex_);
      if (const auto it = listed_.find(key); it != listed_.end()) return it->second;
    }
    std::vector<std::string> names = list_implementations(p, layout, blocked, winograd);
    std::lock_guard lock(mutex_);
    listed_.emplace(key, names);
    return names;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::vector<std::string>> listed_;
};

}  // namespace

// Listing creates a primitive descriptor for every implementation oneDNN has (a millisecond or
// more a layer), and a planner asks for the same list many times per layer: applicable(),
// configs() for every cached candidate it weighs, describe(). predict spent most of its time
// here. A list depends only on the request and the thread count, so each is made once.
std::vector<std::string> onednn_implementations(const ConvProblem& problem, Layout layout,
                                                bool blocked, bool winograd) {
  static ListedImplementations listed;
  return listed.get(problem, layout, blocked, winograd);
}

std::size_t onednn_primitives_built() {
  return primitives.size();
}

std::size_t onednn_workspace_bytes(const ConvProblem& problem, Layout layout, const OneDnnChoice& choice) {
  return built(problem, layout, choice).workspace_bytes;
}

void run_onednn(const ConvProblem& problem, Layout layout, const OneDnnChoice& choice,
                const ConvArgs& args, Workspace workspace) {
  check_conv_args(problem, args, layout);
  const Built& b = built(problem, layout, choice);
  TUNECNN_CHECK(workspace.bytes >= b.workspace_bytes, "oneDNN conv needs ", b.workspace_bytes,
                " workspace bytes, got ", workspace.bytes);
  // Its JIT code uses aligned loads on the scratchpad and the staged copies.
  TUNECNN_CHECK(reinterpret_cast<std::uintptr_t>(workspace.data) % kWorkspaceAlignment == 0,
                "oneDNN conv needs its workspace on a ", kWorkspaceAlignment, "-byte boundary");
  match_onednn_threads_to_ours();
  const dnnl::engine& engine = onednn_cpu_engine();
  dnnl::stream stream(engine);
  auto* base = workspace.as<unsigned char>();
  std::unordered_map<int, memory> plain, primitive_args;
  for (const Operand& op : b.operands)
    plain[op.arg] = memory(op.plain, engine, tensor_data(args, op));
  primitive_args = plain;
  std::unordered_map<int, memory> reorder_scratchpad;
  if (b.scratchpad_bytes > 0) {
    const memory::desc bytes({static_cast<memory::dim>(b.scratchpad_bytes)}, memory::data_type::u8, Tag::x);
    primitive_args[DNNL_ARG_SCRATCHPAD] = memory(bytes, engine, base);
    reorder_scratchpad[DNNL_ARG_SCRATCHPAD] = primitive_args[DNNL_ARG_SCRATCHPAD];
  }
  const auto copy = [&](const dnnl::reorder& reorder, const memory& from, const memory& to) {
    std::unordered_map<int, memory> reorder_args = reorder_scratchpad;
    reorder_args[DNNL_ARG_FROM] = from;
    reorder_args[DNNL_ARG_TO] = to;
    reorder.execute(stream, reorder_args);
  };
  for (const Staged& s : b.staged) {
    primitive_args[s.arg] = memory(s.inner, engine, base + s.offset);
    if (!s.output) copy(s.reorder, plain[s.arg], primitive_args[s.arg]);
  }
  b.primitive.execute(stream, primitive_args);
  for (const Staged& s : b.staged)
    if (s.output) copy(s.reorder, primitive_args[s.arg], plain[s.arg]);
  stream.wait();
}

}  // namespace tunecnn
