#include "core/communicator.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "core/error.h"

namespace tunecnn {

#ifdef TUNECNN_HAVE_MPI
std::shared_ptr<Communicator> make_mpi_communicator();  // core/mpi_communicator.cpp
#endif

std::string SingleProcess::host() const {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

void SingleProcess::abort(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  std::exit(1);
}

bool mpi_built() {
#ifdef TUNECNN_HAVE_MPI
  return true;
#else
  return false;
#endif
}

namespace {

// The world size the launcher announced, 0 when no launcher started this process.
int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return std::getenv("PMIX_RANK") != nullptr ? 1 : 0;
}

}  // namespace

bool launched_by_mpi() { return launcher_world_size() > 0; }

std::shared_ptr<Communicator> make_communicator() {
#ifdef TUNECNN_HAVE_MPI
  if (launched_by_mpi()) return make_mpi_communicator();
#endif
  const int world = launcher_world_size();
  TUNECNN_CHECK(world <= 1, "started by mpirun as one of ", world,
                " processes, but this build has no MPI, so each would train alone; install "
                "libopenmpi-dev and rebuild (cmake -DTUNECNN_MPI=ON), or run without mpirun");
  return std::make_shared<SingleProcess>();
}

}  // namespace tunecnn
