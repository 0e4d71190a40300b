# TUNECNN_FUZZ=ON: every library is compiled with libFuzzer's coverage hooks and AddressSanitizer
# plus UndefinedBehaviorSanitizer, and fuzz/ adds one fuzzer executable per reader. Only clang
# has libFuzzer; clang-14 with Debian's libfuzzer-14-dev is the toolchain tools/fuzz and CI use.
# `cmake --build DIR --target fuzz_targets` builds the targets and just the libraries they link.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 14)
  message(FATAL_ERROR "TUNECNN_FUZZ=ON needs clang 14 or newer with libFuzzer "
                      "(apt-get install clang-14 libfuzzer-14-dev), configured with "
                      "-DCMAKE_CXX_COMPILER=clang++-14; this is ${CMAKE_CXX_COMPILER_ID} "
                      "${CMAKE_CXX_COMPILER_VERSION} (${CMAKE_CXX_COMPILER}). tools/fuzz does all this.")
endif()
if(TUNECNN_SANITIZE)
  message(FATAL_ERROR "TUNECNN_FUZZ=ON already sanitizes; leave TUNECNN_SANITIZE off")
endif()
# The readers are host code; a fuzz build needs neither the GPU nor MPI (nor the test suite, which
# CMakeLists.txt leaves out unless asked).
set(TUNECNN_CUDA OFF CACHE STRING "" FORCE)
set(TUNECNN_MPI OFF CACHE STRING "" FORCE)
# Nor oneDNN: no reader calls it, and its OpenMP would need clang's libomp.
set(TUNECNN_ONEDNN OFF CACHE STRING "" FORCE)
# ONNX stays as cmake/onnx.cmake finds it (AUTO: with Debian's libonnx-dev and libprotobuf-dev,
# as in CI): fuzz_onnx is built only then. libonnx and protobuf are not instrumented; the
# importer's own code is.
# fuzzer-no-link: coverage instrumentation in the libraries; only the fuzz targets link
# libFuzzer's main. A UB report aborts (no recover), so libFuzzer counts it as a crash.
set(tunecnn_fuzz_flags -fsanitize=fuzzer-no-link,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_compile_options(${tunecnn_fuzz_flags})
add_link_options(-fsanitize=address,undefined)
