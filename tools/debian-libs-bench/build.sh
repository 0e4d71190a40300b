#!/usr/bin/env bash
# Issue 32's measurements: our CIFAR-10 tar.gz reader and image resize against Debian libraries
# (libarchive, stb_image_resize, libjpeg-turbo), side by side. Not part of the CMake build: the
# libraries it compares with are not dependencies of the project. Needs
#   apt-get install -y libarchive-dev libstb-dev libjpeg62-turbo-dev
# Compiles with the Release flags of the project's own build (-O3 -march=native) into OUT
# (default /tmp/debian-libs-bench), then: OUT/tar_bench [ARCHIVE] [REPS], OUT/error_check,
# OUT/resize_bench [REPS], OUT/jpeg_bench [REPS], OUT/decode_bench [ROUNDS] (stb_image against
# datasets/jpeg_decode.cpp, the libjpeg-turbo decoder image_folder now uses). See
# docs/BENCHMARKS.md, issue 32.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tools/debian-libs-bench"
out="${1:-/tmp/debian-libs-bench}"
mkdir -p "$out"
flags=(-std=c++20 -O3 -DNDEBUG -march=native -I"$root" -I/usr/include/stb -w)
for src in "$root"/datasets/{tar_gz,gzip_reader,image_resize,jpeg_decode}.cpp "$here"/*.cpp; do
  g++ "${flags[@]}" -c "$src" -o "$out/$(basename "$src" .cpp).o"
done
cd "$out"
g++ -o tar_bench tar_bench.o tar_libarchive.o tar_gz.o gzip_reader.o -larchive -lz
g++ -o error_check error_check.o tar_libarchive.o tar_gz.o gzip_reader.o -larchive -lz
g++ -o resize_bench resize_bench.o image_resize.o
g++ -o jpeg_bench jpeg_bench.o image_resize.o -ljpeg
g++ -o decode_bench decode_bench.o jpeg_decode.o image_resize.o -ljpeg
echo "built in $out: tar_bench error_check resize_bench jpeg_bench decode_bench"
