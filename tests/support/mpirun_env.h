#pragma once
// The environment a test gives the mpirun it starts (its children inherit it). As root, OpenMPI
// refuses to start without OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM). And every mpirun makes its session
// directory under /tmp/ompi.HOST.UID; two starting at once (ctest -j2: bench scaling's tests
// beside the data-parallel ones) race to make it and one fails with "mkdir ... File exists", so
// each test process's mpiruns get a session base of their own.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace tunecnn::testing {

inline void prepare_mpirun_environment() {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  // Made once per test process, removed when it exits.
  static const struct SessionBase {
    std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tunecnn-mpi-" + std::to_string(getpid()));
    SessionBase() { std::filesystem::create_directories(dir); }
    ~SessionBase() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } base;
  setenv("OMPI_MCA_orte_tmpdir_base", base.dir.c_str(), 1);
}

}  // namespace tunecnn::testing
