#include "tandem/config.h"

#include <omp.h>
#include <sched.h>

#include <mutex>
#include <random>

#include "core/rng.h"

namespace tandem {
namespace {

std::mutex g_mutex;
Rng& global_rng() {
  static Rng rng(std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32));
  return rng;
}
int g_threads = 0;

}  // namespace

void set_random_seed(uint64_t seed) {
  std::lock_guard lock(g_mutex);
  global_rng().reseed(seed);
}

uint64_t next_seed() {
  std::lock_guard lock(g_mutex);
  return global_rng().next();
}

void set_num_threads(int threads) {
  g_threads = threads;
}

int num_threads() {
  if (g_threads > 0) return g_threads;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return omp_get_num_procs();
}

}  // namespace tandem
