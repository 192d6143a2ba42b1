// What every build shares: the timeout setting and how a rank names itself.
#include "parallel/world.h"

#include <cstdlib>

#include "tandem/error.h"
#include "tandem/mpi.h"

namespace tandem {
namespace {
double g_timeout_seconds = 60;
}

namespace mpi {

bool launched() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

void set_timeout(double seconds) {
  if (!(seconds > 0) || seconds > 1e6) {
    throw ConfigError("MPI timeout must be in (0, 1e6] seconds, got " + std::to_string(seconds));
  }
  g_timeout_seconds = seconds;
}

double timeout() {
  return g_timeout_seconds;
}

std::string describe() {
  return detail::describe_rank(rank(), size(), host());
}

}  // namespace mpi

namespace detail {

std::string describe_rank(int rank, int size, const std::string& host) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(size) + " on " + host;
}

std::string World::describe() const {
  return describe_rank(rank(), size(), host());
}

double world_timeout_seconds() {
  return g_timeout_seconds;
}

}  // namespace detail
}  // namespace tandem
