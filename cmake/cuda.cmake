# TUNECNN_CUDA=AUTO turns CUDA on when nvcc is found (also under /usr/local/cuda, off PATH);
# EMULATE builds the CUDA backend for the host instead (cmake/cuda_emulation.cmake).
set(TUNECNN_HAVE_CUDA OFF)
set(TUNECNN_CUDA_EMULATION OFF)
if(TUNECNN_CUDA STREQUAL "EMULATE")
  include(cmake/cuda_emulation.cmake)
elseif(NOT TUNECNN_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "GPU architectures to compile for (90: H100/H200)")
    # One shared cudart for every library of the process: a static copy in each shared library
    # (BUILD_SHARED_LIBS, the GPU package) would give each its own runtime state.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # CUDA sources take the C++ standard (C++20), whose nvcc flag CMake 3.25 does not know yet.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
      set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    endif()
    # Device lambdas for the simple elementwise kernels (core/cuda_elementwise.cuh).
    string(APPEND CMAKE_CUDA_FLAGS " --extended-lambda")
    find_package(CUDAToolkit REQUIRED)
    find_library(TUNECNN_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
    set(TUNECNN_HAVE_CUDA ON)
  elseif(TUNECNN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TUNECNN_CUDA=ON but no CUDA compiler (nvcc) was found; "
                        "install the CUDA toolkit or configure with -DTUNECNN_CUDA=OFF")
  endif()
endif()
message(STATUS "tunecnn: CUDA backend ${TUNECNN_HAVE_CUDA}${TUNECNN_CUDA_EMULATION_NOTE}")

# Adds a folder's .cu files to its library: compiled by nvcc, or rewritten for the host emulation.
function(tunecnn_add_cuda_sources target)
  if(TUNECNN_CUDA_EMULATION)
    tunecnn_add_emulated_cuda_sources(${target} ${ARGN})
  else()
    target_sources(${target} PRIVATE ${ARGN})
  endif()
endfunction()
