#include "advise/probes.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "core/aligned_buffer.h"
#include "profile/phase_timer.h"

namespace tandem::detail {
namespace {

// The fastest of `repeats` runs of `pass`.
template <class Pass>
double best_seconds(int repeats, Pass&& pass) {
  double best = 1e300;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto start = Clock::now();
    pass();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

// Spins as tandem's device barrier does, yielding after 64 tries (so one core still works).
void wait_for(const std::atomic<int>& ball, int value) {
  for (int spins = 0; ball.load(std::memory_order_acquire) != value; ++spins) {
    if (spins > 64) std::this_thread::yield();
  }
}

}  // namespace

double copy_bandwidth(int64_t bytes, int repeats) {
  const int64_t n = std::max<int64_t>(bytes / 4, 1);
  AlignedBuffer a(n), b(n);
  std::fill(a.data(), a.data() + n, 1.f);
  std::fill(b.data(), b.data() + n, 0.f);  // touched: no page faults inside the timing
  const double s = best_seconds(repeats, [&] { std::memcpy(b.data(), a.data(), n * 4); });
  return static_cast<double>(n * 4) / s;
}

double sum_bandwidth(int64_t bytes, int repeats) {
  const int64_t n = std::max<int64_t>(bytes / 4, 1);
  AlignedBuffer a(n), b(n);
  std::fill(a.data(), a.data() + n, 1e-7f);
  std::fill(b.data(), b.data() + n, 0.f);
  float* __restrict out = b.data();
  const float* __restrict in = a.data();
  const double s = best_seconds(repeats, [&] {
    for (int64_t i = 0; i < n; ++i) out[i] += in[i];
  });
  return 3.0 * static_cast<double>(n * 4) / s;
}

double handoff_latency(int repeats) {
  constexpr int kTrips = 20000;
  std::vector<double> one_way;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    std::atomic<int> ball{0};
    std::thread other([&] {
      for (int i = 0; i < kTrips; ++i) {
        wait_for(ball, 2 * i + 1);
        ball.store(2 * i + 2, std::memory_order_release);
      }
    });
    const auto start = Clock::now();
    for (int i = 0; i < kTrips; ++i) {
      ball.store(2 * i + 1, std::memory_order_release);
      wait_for(ball, 2 * i + 2);
    }
    one_way.push_back(seconds_since(start) / (2.0 * kTrips));
    other.join();
  }
  std::sort(one_way.begin(), one_way.end());
  return one_way[one_way.size() / 2];
}

}  // namespace tandem::detail
