# `cmake --install` puts the programs in bin/ and, in a BUILD_SHARED_LIBS build, the project's
# libraries in lib/ (found through the RPATH $ORIGIN/../lib). The component gpu_tests, installed
# only when named, adds the GPU test executables in tests/: tools/package-gpu ships them so that
# a GPU node without our build dependencies runs the GPU suites (gpu-check).
install(TARGETS train autotune bench export-onnx evaluate predict RUNTIME DESTINATION bin)

if(BUILD_SHARED_LIBS)
  set(tunecnn_libraries tunecnn_core tunecnn_ops tunecnn_autotune tunecnn_models tunecnn_datasets
      tunecnn_app_common tunecnn_training tunecnn_bench tunecnn_autotune_cli)
  if(TUNECNN_CUDA_EMULATION)
    list(APPEND tunecnn_libraries tunecnn_cuda_emulation)
  endif()
  install(TARGETS ${tunecnn_libraries} LIBRARY DESTINATION lib)
endif()

if(TUNECNN_TESTS AND TUNECNN_HAVE_CUDA)
  # The GPU suites, and the suites that hold a few GPU tests among CPU ones (gpu-check runs
  # only their *Gpu* tests).
  set(tunecnn_gpu_tests test_cuda test_cuda_ops test_cuda_training test_cuda_conv test_cuda_tools
      test_bench_depthwise test_bench_layout test_bench_plans test_softmax test_tuning_cache)
  if(TUNECNN_CUDA_EMULATION)
    list(APPEND tunecnn_gpu_tests test_cuda_emulation)
  endif()
  install(TARGETS ${tunecnn_gpu_tests} RUNTIME DESTINATION tests COMPONENT gpu_tests EXCLUDE_FROM_ALL)
endif()

# A site's system tuning cache (written by `autotune export`), installed where the programs look
# for it: share/tunecnn/tuning.yaml beside their bin/ (autotune/tuning_cache_layers.h). Read-only
# under each user's cache; without it the programs run as before.
set(TUNECNN_SYSTEM_TUNE_CACHE_FILE "" CACHE FILEPATH
    "a system tuning cache (autotune export) to install as share/tunecnn/tuning.yaml")
if(TUNECNN_SYSTEM_TUNE_CACHE_FILE)
  install(FILES ${TUNECNN_SYSTEM_TUNE_CACHE_FILE} DESTINATION share/tunecnn RENAME tuning.yaml)
endif()
