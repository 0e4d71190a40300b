# TUNECNN_SANITIZE=thread: ThreadSanitizer over every library and program (tools/tsan-tests).
# Only code compiled here is instrumented; what the libraries we link do is invisible to it.
if(TUNECNN_HAVE_CUDA)
  # As for ASan: the emulation switches stacks by hand and nvcc's host code is not instrumented.
  message(FATAL_ERROR "TUNECNN_SANITIZE=thread needs -DTUNECNN_CUDA=OFF")
endif()
if(TUNECNN_HAVE_ONEDNN)
  # Debian's oneDNN runs on libgomp, which is not instrumented: its team's barriers are
  # invisible, so every oneDNN call would report its own buffers as races.
  message(FATAL_ERROR "TUNECNN_SANITIZE=thread needs -DTUNECNN_ONEDNN=OFF (oneDNN's OpenMP is not instrumented)")
endif()
set(tunecnn_tsan_flags -fsanitize=thread -fno-omit-frame-pointer)
add_compile_options(${tunecnn_tsan_flags})
add_link_options(${tunecnn_tsan_flags})
# Debian's TBB is not instrumented either, and a task handed to a TBB worker reaches it through
# the scheduler's own atomics, which ThreadSanitizer cannot see: a correct parallel_for reports
# its body's writes as races with the caller's. So every program of this build runs TBB at one
# thread (tools/tsan/tbb_one_thread.cpp): a parallel_for's body runs on the thread that called it,
# and what ThreadSanitizer checks is our own threads against each other (the DataLoader's producer
# and the training thread, each running TBB code), not TBB's tasks against each other.
add_library(tunecnn_tsan_tbb_one_thread OBJECT tools/tsan/tbb_one_thread.cpp)
target_link_libraries(tunecnn_tsan_tbb_one_thread PRIVATE TBB::tbb)
link_libraries(tunecnn_tsan_tbb_one_thread)
