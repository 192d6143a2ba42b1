#include "tandem/config.h"

#include <omp.h>
#include <sched.h>

#include <atomic>
#include <mutex>
#include <random>

#include "core/rng.h"
#include "tandem/error.h"

namespace tandem {
namespace {

std::mutex g_mutex;
Rng& global_rng() {
  static Rng rng(std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32));
  return rng;
}
int g_threads = 0;
std::atomic<bool> g_flush_denormals{true};

}  // namespace

void set_random_seed(uint64_t seed) {
  std::lock_guard lock(g_mutex);
  global_rng().reseed(seed);
}

uint64_t next_seed() {
  std::lock_guard lock(g_mutex);
  return global_rng().next();
}

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return omp_get_num_procs();
}

int max_threads() {
  return kOversubscription * available_cores();
}

void set_num_threads(int threads) {
  if (threads > max_threads()) {
    throw ConfigError("threads: " + std::to_string(threads) + " is more than " +
                      std::to_string(kOversubscription) + " per core (" +
                      std::to_string(available_cores()) + " cores available here)");
  }
  g_threads = threads;
}

void set_flush_denormals(bool flush) {
  g_flush_denormals.store(flush, std::memory_order_relaxed);
}

bool flush_denormals() {
  return g_flush_denormals.load(std::memory_order_relaxed);
}

int num_threads() {
  return g_threads > 0 ? g_threads : available_cores();
}

}  // namespace tandem
