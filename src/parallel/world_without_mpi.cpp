// tandem::mpi in a build without MPI: a job of one rank. Started by mpirun as one of
// several ranks, init() refuses, rather than let N unconnected copies train alone.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "parallel/world.h"
#include "tandem/error.h"
#include "tandem/mpi.h"

namespace tandem {
namespace mpi {
namespace {
bool g_initialized = false;
}

bool available() {
  return false;
}

void init(int&, char**&) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && std::atoi(value) > 1) {
      throw ConfigError(std::string("this tandem was built without MPI (TANDEM_WITH_MPI=OFF or ") +
                        "MPI not found) but was started as one of " + value +
                        " ranks; rebuild with libopenmpi-dev installed");
    }
  }
  g_initialized = true;
}

bool initialized() {
  return g_initialized;
}
void finalize() {
  g_initialized = false;
}
int rank() {
  return 0;
}
int size() {
  return 1;
}

std::string host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

void abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::exit(code);
}

}  // namespace mpi

namespace detail {
World* current_world() {
  return nullptr;
}
}  // namespace detail
}  // namespace tandem
