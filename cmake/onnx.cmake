# TUNECNN_ONNX=AUTO imports networks from ONNX files (models/onnx*.cpp) when Debian's ONNX and
# protobuf are found (libonnx-dev, libprotobuf-dev): their schema and checker read the file, so no
# protobuf is decoded by hand. Without them everything else builds, and naming a .onnx model says
# what to install.
set(TUNECNN_ONNX AUTO CACHE STRING "Import ONNX networks: AUTO (when ONNX and protobuf are found), ON or OFF")
set_property(CACHE TUNECNN_ONNX PROPERTY STRINGS AUTO ON OFF)
set(TUNECNN_HAVE_ONNX OFF)
if(NOT TUNECNN_ONNX STREQUAL "OFF")
  if(TUNECNN_ONNX STREQUAL "ON")
    find_package(Protobuf REQUIRED)
    find_package(ONNX CONFIG REQUIRED)
  else()
    find_package(Protobuf QUIET)
    if(Protobuf_FOUND)
      find_package(ONNX CONFIG QUIET)
    endif()
  endif()
  if(Protobuf_FOUND AND ONNX_FOUND)
    set(TUNECNN_HAVE_ONNX ON)
  endif()
endif()
message(STATUS "tunecnn: ONNX import ${TUNECNN_HAVE_ONNX}")
