# Which shared libraries the GPU package carries, and the check that it carries all it must.
# Sourced by tools/package-gpu (bundle_libraries) and tools/check-package-gpu
# (check_package_libraries). The package leaves out two kinds, which the node provides:
# - the NVIDIA libraries: the driver's libcuda and the CUDA runtime, cuBLAS and cuDNN, which must
#   match the node's driver (gpu-check finds them);
# - the C and C++ runtime: the node's are newer than ours, and its cuDNN needs its libstdc++.

is_nvidia_library() {
  case "$1" in
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libcudnn*.so*|libnvidia-*|libnvrtc*|libnvJitLink*) return 0 ;;
    *) return 1 ;;
  esac
}

is_c_runtime_library() {
  case "$1" in
    linux-vdso.so*|ld-linux*.so*|libc.so*|libm.so*|libmvec.so*|libpthread.so*|libdl.so*|librt.so*|libstdc++.so*|libgcc_s.so*) return 0 ;;
    *) return 1 ;;
  esac
}

# The programs and test executables of an unpacked package. ldd lists an executable's libraries
# transitively, resolved as the loader will at run time: a bundled library's own dependencies
# (libopenblas's libgfortran) through the executable's RPATH, which a library checked alone lacks.
package_executables() {
  local pkg="$1" f
  for f in "$pkg"/bin/* "$pkg"/tests/*; do
    [ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
  done
  return 0
}

# "NAME PATH" per library ldd resolves for FILE ("NAME not-found" when it cannot), without the
# vdso, which has no file.
ldd_dependencies() {
  LD_LIBRARY_PATH="" ldd "$1" | awk '
    $2 == "=>" && $3 == "not" { print $1, "not-found"; next }
    $2 == "=>" && $3 ~ /^\// { print $1, $3 }'
}

# Copies into PKG/lib every library the package's programs load from this machine, except the
# NVIDIA and C runtime ones. One pass over the executables finds them all.
bundle_libraries() {
  local pkg="$1" file name path
  while read -r file; do
    while read -r name path; do
      is_nvidia_library "$name" || is_c_runtime_library "$name" && continue
      [ "$path" != not-found ] || { echo "package-gpu: $file needs $name, which is not installed here" >&2; return 1; }
      case "$path" in "$pkg"/*) continue ;; esac
      [ -e "$pkg/lib/$name" ] || cp -L "$path" "$pkg/lib/$name"
    done < <(ldd_dependencies "$file")
  done < <(package_executables "$pkg")
}

# Fails, naming the file and the library, when a program of the unpacked package
# loads anything from outside it other than an NVIDIA or C runtime library, or cannot find a
# library that is not an NVIDIA one. Run with LD_LIBRARY_PATH empty, as on a bare node.
check_package_libraries() {
  local pkg="$1" file name path problems=0 checked=0
  while read -r file; do
    checked=$((checked + 1))
    while read -r name path; do
      if is_nvidia_library "$name"; then continue; fi
      if [ "$path" = not-found ]; then
        echo "not found: ${file#"$pkg"/} needs $name" >&2; problems=$((problems + 1))
      elif is_c_runtime_library "$name"; then continue
      elif [ "${path#"$pkg"/}" = "$path" ]; then
        echo "from outside the package: ${file#"$pkg"/} loads $name from $path" >&2; problems=$((problems + 1))
      fi
    done < <(ldd_dependencies "$file")
  done < <(package_executables "$pkg")
  [ "$checked" -gt 0 ] || { echo "no programs in $pkg" >&2; return 1; }
  echo "libraries: the programs of $checked files checked, $problems problems"
  [ "$problems" -eq 0 ]
}
