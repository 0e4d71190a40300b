# TUNECNN_ONEDNN=AUTO adds oneDNN's convolution as CPU conv solvers (ops/conv/onednn*.cpp) when
# oneDNN is found (Debian: libdnnl-dev); without it everything builds with our own solvers only.
set(TUNECNN_ONEDNN AUTO CACHE STRING "Add oneDNN's primitives as CPU solvers: AUTO (when oneDNN is found), ON or OFF")
set_property(CACHE TUNECNN_ONEDNN PROPERTY STRINGS AUTO ON OFF)
set(TUNECNN_HAVE_ONEDNN OFF)
if(NOT TUNECNN_ONEDNN STREQUAL "OFF")
  if(TUNECNN_ONEDNN STREQUAL "ON")
    find_package(dnnl CONFIG REQUIRED)
  else()
    # Debian's dnnl-config.cmake requires OpenCL's headers (its GPU runtime is OpenCL) and fails the
    # whole configure without them: AUTO looks for them first and builds without oneDNN if absent.
    find_package(OpenCL QUIET)
    if(OpenCL_FOUND)
      find_package(dnnl CONFIG QUIET)
    else()
      message(STATUS "tunecnn: oneDNN needs OpenCL's headers to be found (apt-get install ocl-icd-opencl-dev)")
    endif()
  endif()
  if(dnnl_FOUND)
    # Debian's oneDNN runs on OpenMP: the solver sets OpenMP's thread count to TBB's before each
    # call, so the two pools take turns on the same cores instead of oversubscribing them. (clang
    # needs libomp-dev for it; without, AUTO builds without oneDNN.)
    find_package(OpenMP COMPONENTS CXX QUIET)
    if(OpenMP_CXX_FOUND)
      set(TUNECNN_HAVE_ONEDNN ON)
    elseif(TUNECNN_ONEDNN STREQUAL "ON")
      message(FATAL_ERROR "TUNECNN_ONEDNN=ON: oneDNN was found but this compiler has no OpenMP")
    endif()
  endif()
endif()
message(STATUS "tunecnn: oneDNN CPU solvers ${TUNECNN_HAVE_ONEDNN}")
