// The kernel runner of device.h: blocks in order, each block's threads as fibers on this thread.
// Fibers switch with a few lines of assembly (x86-64 System V) rather than swapcontext, which
// makes a system call at every switch and would dominate kernels with many barriers.
#include "tests/cuda_emulation/device.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#if !defined(__x86_64__)
#error "the CUDA emulation switches fibers with x86-64 assembly"
#endif

extern "C" void tunecnn_emu_set_last_error(cudaError_t);  // cudart.cpp
extern "C" void tunecnn_emu_check_stream(cudaStream_t, const char* call);  // cudart.cpp
extern "C" void tunecnn_emu_switch(void** save_sp, void* load_sp);
extern "C" [[noreturn]] void tunecnn_emu_fiber_entry();

// Saves the callee-saved registers on the current stack and its pointer in *save_sp, then
// restores the same from load_sp and returns on that stack.
asm(R"(
.text
.globl tunecnn_emu_switch
.type tunecnn_emu_switch,@function
tunecnn_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size tunecnn_emu_switch, .-tunecnn_emu_switch
)");

namespace tunecnn::emu {
namespace {

constexpr std::size_t kStackBytes = 256 * 1024;
constexpr int kWarpSize = 32;

enum class State { runnable, at_block_barrier, at_warp_barrier, done };

struct Fiber {
  void* sp = nullptr;  // while switched out
  char* stack = nullptr;
  State state = State::runnable;
  uint3 index{};
  alignas(16) unsigned char lane_value[16];
};

struct Block {
  void* scheduler_sp = nullptr;
  std::vector<Fiber> fibers;  // in linear thread order: 32 consecutive fibers are a warp
  const std::function<void()>* body = nullptr;
  int current = -1;
  bool saw_barrier = false;
  bool run_direct = false;  // the first block had no barrier: threads run as plain calls
  std::vector<unsigned char> dynamic_shared;
};

thread_local Block* running = nullptr;

// Fiber stacks outlive launches: allocating (and so faulting in) 256 KiB per thread at every
// launch cost more than most kernels.
char* fiber_stack(std::size_t thread) {
  thread_local std::vector<std::unique_ptr<char[]>> stacks;
  while (stacks.size() <= thread) stacks.emplace_back(new char[kStackBytes]);
  return stacks[thread].get();
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "CUDA emulation: %s (block %u,%u,%u, thread %u,%u,%u)\n", what,
               block_index.x, block_index.y, block_index.z, thread_index.x, thread_index.y,
               thread_index.z);
  std::abort();
}

const char* configuration_error(dim3 grid, dim3 block, std::size_t shared) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.z > 64) return "block size";
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return "empty grid";
  if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) return "grid size";
  if (shared > 48 * 1024) return "dynamic shared memory over 48 KiB";
  return nullptr;
}

void prepare_stack(Fiber& f) {
  auto top = reinterpret_cast<std::uintptr_t>(f.stack + kStackBytes) & ~std::uintptr_t{15};
  auto* p = reinterpret_cast<void**>(top);
  *--p = nullptr;  // the entry's return address: it never returns
  *--p = reinterpret_cast<void*>(&tunecnn_emu_fiber_entry);  // where the first switch returns
  for (int i = 0; i < 6; ++i) *--p = nullptr;                // rbp, rbx, r12-r15
  f.sp = p;
  f.state = State::runnable;
}

void wait_at(State barrier) {
  Block* b = running;
  if (b == nullptr) fail("a barrier outside a kernel");
  if (b->run_direct) fail("a barrier in a kernel whose first block had none");
  b->saw_barrier = true;
  const int me = b->current;
  b->fibers[me].state = barrier;
  tunecnn_emu_switch(&b->fibers[me].sp, b->scheduler_sp);
  b->current = me;
  thread_index = b->fibers[me].index;
}

// Releases the threads of every warp whose live threads all wait at a warp barrier.
bool release_warps(Block& b) {
  bool released = false;
  const int n = static_cast<int>(b.fibers.size());
  for (int lo = 0; lo < n; lo += kWarpSize) {
    const int hi = std::min(n, lo + kWarpSize);
    int waiting = 0, done = 0;
    for (int i = lo; i < hi; ++i) {
      waiting += b.fibers[i].state == State::at_warp_barrier;
      done += b.fibers[i].state == State::done;
    }
    if (waiting == 0 || waiting + done != hi - lo) continue;
    for (int i = lo; i < hi; ++i)
      if (b.fibers[i].state == State::at_warp_barrier) b.fibers[i].state = State::runnable;
    released = true;
  }
  return released;
}

// Releases __syncthreads once every thread of the block waits there.
bool release_block(Block& b) {
  int waiting = 0, done = 0;
  for (const Fiber& f : b.fibers) {
    waiting += f.state == State::at_block_barrier;
    done += f.state == State::done;
  }
  if (waiting == 0 || waiting + done != static_cast<int>(b.fibers.size())) return false;
  if (done > 0) fail("__syncthreads not reached by every thread of the block");
  for (Fiber& f : b.fibers) f.state = State::runnable;
  return true;
}

void run_fibers(Block& b, bool reverse) {
  const int n = static_cast<int>(b.fibers.size());
  for (Fiber& f : b.fibers) prepare_stack(f);
  for (;;) {
    for (int k = 0; k < n; ++k) {
      const int i = reverse ? n - 1 - k : k;
      if (b.fibers[i].state != State::runnable) continue;
      b.current = i;
      thread_index = b.fibers[i].index;
      tunecnn_emu_switch(&b.scheduler_sp, b.fibers[i].sp);
    }
    bool all_done = true;
    for (const Fiber& f : b.fibers) all_done = all_done && f.state == State::done;
    if (all_done) return;
    const bool warps = release_warps(b);
    if (!release_block(b) && !warps) fail("threads wait at barriers that can never complete");
  }
}

void run_direct(Block& b, bool reverse) {
  const int n = static_cast<int>(b.fibers.size());
  for (int k = 0; k < n; ++k) {
    b.current = reverse ? n - 1 - k : k;
    thread_index = b.fibers[b.current].index;
    (*b.body)();
  }
}

void run_block(Block& b, uint3 index, bool reverse) {
  block_index = index;
  std::memset(b.dynamic_shared.data(), 0xFF, b.dynamic_shared.size());  // garbage reads as NaN
  if (b.run_direct) return run_direct(b, reverse);
  run_fibers(b, reverse);
}

}  // namespace

void launch(dim3 grid, dim3 block, std::size_t dynamic_shared_bytes, cudaStream_t stream,
            const std::function<void()>& thread_body) {
  tunecnn_emu_check_stream(stream, "a kernel launch");
  if (const char* error = configuration_error(grid, block, dynamic_shared_bytes)) {
    std::fprintf(stderr, "CUDA emulation: bad launch, %s: grid (%u,%u,%u), block (%u,%u,%u), "
                 "%zu bytes of dynamic shared memory\n", error, grid.x, grid.y, grid.z, block.x,
                 block.y, block.z, dynamic_shared_bytes);
    tunecnn_emu_set_last_error(cudaErrorInvalidConfiguration);
    return;
  }
  if (running != nullptr) fail("a launch from inside a kernel");
  // Blocks and threads last first: a result that depends on their order (two blocks writing one
  // place, a missing barrier the other way round) then changes.
  static const bool reverse = std::getenv("TUNECNN_EMU_REVERSE") != nullptr;
  Block b;
  b.body = &thread_body;
  b.fibers.resize(static_cast<std::size_t>(block.x) * block.y * block.z);
  for (std::size_t i = 0; i < b.fibers.size(); ++i) {
    b.fibers[i].stack = fiber_stack(i);
    b.fibers[i].index = uint3{static_cast<unsigned>(i % block.x),
                              static_cast<unsigned>(i / block.x % block.y),
                              static_cast<unsigned>(i / (block.x * block.y))};
  }
  b.dynamic_shared.resize(dynamic_shared_bytes + 16);
  running = &b;
  grid_size = grid;
  block_size = block;
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  for (unsigned long long k = 0; k < blocks; ++k) {
    const unsigned long long i = reverse ? blocks - 1 - k : k;
    run_block(b, uint3{static_cast<unsigned>(i % grid.x), static_cast<unsigned>(i / grid.x % grid.y),
                       static_cast<unsigned>(i / (1ull * grid.x * grid.y))}, reverse);
    if (k == 0 && !b.saw_barrier) b.run_direct = true;
  }
  running = nullptr;
}

void block_barrier() { wait_at(State::at_block_barrier); }
void warp_barrier() { wait_at(State::at_warp_barrier); }

unsigned char* dynamic_shared() {
  if (running == nullptr) fail("extern __shared__ outside a kernel");
  const auto at = reinterpret_cast<std::uintptr_t>(running->dynamic_shared.data());
  return reinterpret_cast<unsigned char*>((at + 15) & ~std::uintptr_t{15});
}

void post_lane_value(const void* value, std::size_t bytes) {
  if (bytes > sizeof(Fiber::lane_value)) fail("a shuffled value over 16 bytes");
  std::memcpy(running->fibers[running->current].lane_value, value, bytes);
}

bool read_lane_value(unsigned delta, void* value, std::size_t bytes) {
  const int me = running->current, from = me + static_cast<int>(delta);
  if (me % kWarpSize + static_cast<int>(delta) >= kWarpSize) return false;
  if (from >= static_cast<int>(running->fibers.size())) return false;
  std::memcpy(value, running->fibers[from].lane_value, bytes);
  return true;
}

}  // namespace tunecnn::emu

extern "C" void tunecnn_emu_fiber_entry() {
  using tunecnn::emu::running;
  (*running->body)();
  running->fibers[running->current].state = tunecnn::emu::State::done;
  tunecnn_emu_switch(&running->fibers[running->current].sp, running->scheduler_sp);
  std::abort();  // a finished fiber is never resumed
}
