# Every dependency is a Debian 12 package; the README's install command lists them.
find_package(Threads REQUIRED)
find_package(TBB REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(yaml-cpp REQUIRED)
find_package(ZLIB REQUIRED)

# Debian ships OpenBLAS's cblas.h in a per-variant folder; prefer the pthread build.
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu /usr/include/aarch64-linux-gnu /usr/include
  PATH_SUFFIXES openblas-pthread openblas REQUIRED)
find_library(OPENBLAS_LIBRARY NAMES openblas REQUIRED)
add_library(tunecnn_openblas INTERFACE)
target_include_directories(tunecnn_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(tunecnn_openblas INTERFACE ${OPENBLAS_LIBRARY})

find_path(STB_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb REQUIRED)

# JPEG is decoded by libjpeg-turbo (libjpeg62-turbo-dev), PNG by stb_image (libstb-dev). No
# fallback to stb_image for JPEG: one decoder per format keeps one set of behaviours to test.
find_package(JPEG)
if(NOT JPEG_FOUND)
  message(FATAL_ERROR "libjpeg (jpeglib.h) not found: install Debian's libjpeg62-turbo-dev, which "
                      "datasets/jpeg_decode.cpp decodes JPEG files with")
endif()
