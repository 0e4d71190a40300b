# TUNECNN_MPI=AUTO builds data-parallel training on MPI when an MPI library is found (Debian:
# libopenmpi-dev); without it everything builds and `train` runs single-process.
set(TUNECNN_MPI AUTO CACHE STRING "Build data-parallel training on MPI: AUTO (when MPI is found), ON or OFF")
set_property(CACHE TUNECNN_MPI PROPERTY STRINGS AUTO ON OFF)
set(TUNECNN_HAVE_MPI OFF)
# The C API from C++ (the project enables no C compiler); not the deprecated C++ bindings.
set(MPI_CXX_SKIP_MPICXX ON)
if(NOT TUNECNN_MPI STREQUAL "OFF")
  if(TUNECNN_MPI STREQUAL "ON")
    find_package(MPI COMPONENTS CXX REQUIRED)
  else()
    find_package(MPI COMPONENTS CXX QUIET)
  endif()
  if(MPI_CXX_FOUND)
    set(TUNECNN_HAVE_MPI ON)
    find_program(TUNECNN_MPIEXEC NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
  endif()
endif()
message(STATUS "tunecnn: MPI data parallelism ${TUNECNN_HAVE_MPI}")
