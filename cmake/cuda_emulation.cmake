# -DTUNECNN_CUDA=EMULATE: the CUDA backend built for the host, so the GPU tests run where no GPU
# is (tests/cuda_emulation/device.h says what that can and cannot show). Needs the CUDA and cuDNN
# headers for their types, not nvcc and not the libraries: every .cu file is rewritten by
# cu_to_host and compiled as C++, and the runtime, cuBLAS and cuDNN calls go to host versions.
set(TUNECNN_EMULATION_DIR ${PROJECT_SOURCE_DIR}/tests/cuda_emulation)
set(TUNECNN_EMULATED_SOURCE_DIR ${CMAKE_BINARY_DIR}/cuda_emulation)

find_path(TUNECNN_CUDA_INCLUDE_DIR cuda_runtime_api.h HINTS /usr/local/cuda/include REQUIRED)
find_path(TUNECNN_CUDNN_INCLUDE_DIR cudnn.h HINTS ${TUNECNN_CUDA_INCLUDE_DIR} REQUIRED)

add_executable(cu_to_host ${TUNECNN_EMULATION_DIR}/cu_to_host.cpp)
# Static or shared like the project's libraries: linked statically into several shared ones, each
# would hold its own emulated device.
add_library(tunecnn_cuda_emulation
  ${TUNECNN_EMULATION_DIR}/device.cpp ${TUNECNN_EMULATION_DIR}/cudart.cpp
  ${TUNECNN_EMULATION_DIR}/cublas.cpp ${TUNECNN_EMULATION_DIR}/cudnn.cpp)
target_include_directories(tunecnn_cuda_emulation PUBLIC ${PROJECT_SOURCE_DIR})
target_include_directories(tunecnn_cuda_emulation SYSTEM PUBLIC ${TUNECNN_CUDA_INCLUDE_DIR}
                           ${TUNECNN_CUDNN_INCLUDE_DIR})
# The libraries' usual names, so the folders link the same way in both builds.
add_library(CUDA::cudart ALIAS tunecnn_cuda_emulation)
add_library(CUDA::cublas ALIAS tunecnn_cuda_emulation)
set(TUNECNN_CUDNN_LIBRARY tunecnn_cuda_emulation)

# Headers with kernels in them are rewritten once, for every folder that includes them.
file(GLOB_RECURSE TUNECNN_CUDA_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/core/*.cuh
     ${PROJECT_SOURCE_DIR}/ops/*.cuh)
set(emulated_headers "")
foreach(header ${TUNECNN_CUDA_HEADERS})
  file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${header})
  set(emulated ${TUNECNN_EMULATED_SOURCE_DIR}/${relative})
  add_custom_command(OUTPUT ${emulated} COMMAND cu_to_host ${header} ${emulated}
                     DEPENDS cu_to_host ${header} COMMENT "Rewriting ${relative} for the host")
  list(APPEND emulated_headers ${emulated})
endforeach()
add_custom_target(tunecnn_emulated_headers DEPENDS ${emulated_headers})

function(tunecnn_add_emulated_cuda_sources target)
  # threadIdx is unsigned here as on a GPU, where nvcc does not warn when it meets an int; nor
  # does it about its own #pragma unroll.
  set(quiet "-Wno-sign-compare;-Wno-unknown-pragmas")
  foreach(source ${ARGN})
    file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${source})
    set(emulated ${TUNECNN_EMULATED_SOURCE_DIR}/${relative}.cpp)
    get_filename_component(folder ${source} DIRECTORY)
    add_custom_command(OUTPUT ${emulated} COMMAND cu_to_host ${source} ${emulated}
                       DEPENDS cu_to_host ${source} COMMENT "Rewriting ${relative} for the host")
    # device.h first; a header beside the source that was not rewritten is found in its folder.
    set(options -include ${TUNECNN_EMULATION_DIR}/device.h -iquote ${folder} ${quiet})
    set_source_files_properties(${emulated} PROPERTIES COMPILE_OPTIONS "${options}")
    target_sources(${target} PRIVATE ${emulated})
  endforeach()
  target_include_directories(${target} BEFORE PRIVATE ${TUNECNN_EMULATED_SOURCE_DIR})
  add_dependencies(${target} tunecnn_emulated_headers)
endfunction()

set(TUNECNN_HAVE_CUDA ON)
set(TUNECNN_CUDA_EMULATION ON)
set(TUNECNN_CUDA_EMULATION_NOTE " (emulated on the host: for tests, not for speed)")
