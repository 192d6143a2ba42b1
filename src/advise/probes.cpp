#include "advise/probes.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "advise/step_run.h"
#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "parallel/bf16.h"
#include "parallel/device_group.h"
#include "profile/phase_timer.h"

namespace tandem::detail {
namespace {

// The fastest of `repeats` runs of `pass`, the caches emptied before each where asked.
template <class Pass>
double best_seconds(int repeats, Pass&& pass, Caches caches = Caches::warm) {
  std::optional<CacheEvictor> evictor;
  if (caches == Caches::evicted) evictor.emplace();
  double best = 1e300;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    if (evictor) evictor->evict();
    best = std::min(best, seconds_of(pass));
  }
  return best;
}

// Spins as tandem's device barrier does, yielding after 64 tries (so one core still works).
void wait_for(const std::atomic<int>& ball, int value) {
  for (int spins = 0; ball.load(std::memory_order_acquire) != value; ++spins) {
    if (spins > 64) std::this_thread::yield();
  }
}

// Seconds of one pass of b += a over n floats.
double sum_pass(float* __restrict out, const float* __restrict in, int64_t n) {
  const auto start = Clock::now();
  for (int64_t i = 0; i < n; ++i) out[i] += in[i];
  return seconds_since(start);
}

// The share of its speed alone that the slowest of `threads` threads keeps when all run
// `pass(thread)` at once: best of `passes` alone against best of the rounds together (what
// the machine can do, as the other probes measure, not its noise).
template <class Pass>
double share_alone_vs_together(int threads, int repeats, int passes, Pass&& pass) {
  double alone = 1e300, together = 1e300;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    for (int p = 0; p < passes; ++p) alone = std::min(alone, pass(0));
    std::vector<double> best(threads, 1e300);
    std::atomic<int> ready{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        // Start together: each waits for all to be up.
        ready.fetch_add(1);
        while (ready.load() < threads) std::this_thread::yield();
        for (int p = 0; p < passes; ++p) best[t] = std::min(best[t], pass(t));
      });
    }
    for (auto& t : pool) t.join();
    together = std::min(together, *std::max_element(best.begin(), best.end()));
  }
  return std::min(1.0, alone / together);
}

}  // namespace

int64_t CacheEvictor::floats() {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const int64_t bytes =
      l3 > 0 ? std::clamp<int64_t>(2 * int64_t{l3}, int64_t{256} << 20, int64_t{4} << 30)
             : int64_t{1} << 30;
  return bytes / 4;
}

int64_t private_cache_bytes() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? int64_t{l2} : 0;
}

int64_t shared_cache_bytes(const std::string& cpu0_cache) {
  // sysfs, not sysconf: glibc's _SC_LEVEL3_CACHE_SIZE on the AMD EPYC (Zen 4) of 2026-12-03
  // reports 320 MiB, sysfs the 32 MiB its cores share.
  for (int index = 0;; ++index) {
    const std::string dir = cpu0_cache + "/index" + std::to_string(index);
    std::ifstream level(dir + "/level"), size(dir + "/size");
    int l = 0;
    if (!(level >> l)) return 0;
    int64_t value = 0;
    std::string unit;
    if (l != 3 || !(size >> value) || value <= 0) continue;
    size >> unit;
    if (unit == "K") return value << 10;
    if (unit == "M") return value << 20;
    if (unit.empty()) return value;
    return 0;
  }
}

CacheEvictor::CacheEvictor() : buffer_(floats()) {
  std::fill(buffer_.data(), buffer_.data() + buffer_.size(), 0.f);
}

void CacheEvictor::evict() {
  constexpr int64_t kLine = 16;  // floats per 64-byte cache line
  float* b = buffer_.data();
  for (int64_t i = 0; i < buffer_.size(); i += kLine) b[i] += 1.f;
}

double copy_bandwidth(int64_t bytes, int repeats, Caches caches) {
  const int64_t n = std::max<int64_t>(bytes / 4, 1);
  AlignedBuffer a(n), b(n);
  std::fill(a.data(), a.data() + n, 1.f);
  std::fill(b.data(), b.data() + n, 0.f);  // touched: no page faults inside the timing
  const double s = best_seconds(
      repeats, [&] { std::memcpy(b.data(), a.data(), n * 4); }, caches);
  return static_cast<double>(n * 4) / s;
}

double sum_bandwidth(int64_t bytes, int repeats, Caches caches) {
  const int64_t n = std::max<int64_t>(bytes / 4, 1);
  AlignedBuffer a(n), b(n);
  std::fill(a.data(), a.data() + n, 1e-7f);
  std::fill(b.data(), b.data() + n, 0.f);
  const double s = best_seconds(
      repeats, [&] { sum_pass(b.data(), a.data(), n); }, caches);
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

double concurrent_memory_share(int threads, int64_t bytes, int repeats) {
  const int64_t n = std::max<int64_t>(bytes / 4, 1);
  std::vector<AlignedBuffer> a, b;
  for (int t = 0; t < threads; ++t) {
    a.emplace_back(n);
    b.emplace_back(n);
    std::fill(a.back().data(), a.back().data() + n, 1e-7f);
    std::fill(b.back().data(), b.back().data() + n, 0.f);
  }
  return share_alone_vs_together(threads, repeats, 3,
                                 [&](int t) { return sum_pass(b[t].data(), a[t].data(), n); });
}

DeviceSync device_sync(int devices, int repeats) {
  constexpr int kRounds = 200, kBarriers = 20;
  constexpr int kWorkRounds = kRounds / 4, kBarrierRounds = kRounds / 10;
  DeviceGroup group(plan_devices(devices, 1));
  std::vector<double> fork_join, per_barrier;
  // Tasks that outlast the devices' spin and end within the caller's, as a small model's
  // rounds do (a round of empty tasks ends before its devices' spin; one longer than the
  // caller's spin pays a wake-up, at most 4% of it: device_group.h).
  constexpr double kWork = 2 * kDeviceSpinSeconds;
  static_assert(kWork < kCallerSpinSeconds);
  auto work = [](int) { busy_for(kWork); };
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    auto start = Clock::now();
    for (int i = 0; i < kWorkRounds; ++i) group.run(work);
    fork_join.push_back(std::max(0.0, seconds_since(start) / kWorkRounds - kWork));
    start = Clock::now();
    for (int i = 0; i < kRounds; ++i) group.run([](int) {});
    const double empty = seconds_since(start) / kRounds;
    start = Clock::now();
    for (int i = 0; i < kBarrierRounds; ++i) {
      group.run([&](int) {
        for (int k = 0; k < kBarriers; ++k) group.barrier().wait();
      });
    }
    const double with_barriers = seconds_since(start) / kBarrierRounds;
    per_barrier.push_back(std::max(0.0, with_barriers - empty) / kBarriers);
  }
  return {median_of(fork_join), median_of(per_barrier)};
}

Bf16LoopSeconds bf16_loop_seconds(int64_t floats, int repeats) {
  const int64_t n = std::max<int64_t>(floats, 1);
  AlignedBuffer a(n);
  std::vector<uint16_t> packed(n), sum(n);
  for (int64_t i = 0; i < n; ++i) a.data()[i] = 1e-3f * static_cast<float>(i % 1000);
  pack_bf16(a.data(), sum.data(), n);
  const auto per_float = [&](auto&& pass) {
    return best_seconds(repeats, pass) / static_cast<double>(n);
  };
  Bf16LoopSeconds s;
  s.floats = n;
  s.pack = per_float([&] { pack_bf16(a.data(), packed.data(), n); });
  s.unpack = per_float([&] { unpack_bf16(packed.data(), a.data(), n); });
  s.sum = per_float([&] { sum_bf16(packed.data(), sum.data(), n); });
  return s;
}

double concurrent_compute_share(int threads, int repeats) {
  // A GEMM of the seed's middle layer at 256 rows: (256, 4096) x (4096, 2048), 4.3 GFLOP.
  constexpr int64_t kRows = 256, kIn = 4096, kOut = 2048;
  struct Worker {
    std::unique_ptr<Backend> backend = make_cpu_backend(1);
    AlignedBuffer x{kRows * kIn}, w{kIn * kOut}, y{kRows * kOut};
    double pass() {
      const auto start = Clock::now();
      backend->gemm({.m = kRows, .n = kOut, .k = kIn, .a = x.data(), .b = w.data(), .c = y.data()});
      return seconds_since(start);
    }
  };
  std::vector<Worker> workers(threads);
  for (auto& k : workers) {
    std::fill(k.x.data(), k.x.data() + kRows * kIn, 1e-3f);
    std::fill(k.w.data(), k.w.data() + kIn * kOut, 1e-3f);
    k.pass();  // oneDNN's primitive created outside the timing
  }
  return share_alone_vs_together(threads, repeats, 2, [&](int t) { return workers[t].pass(); });
}

std::vector<ConvShapeSeconds> conv_shape_seconds(const std::vector<Window2d>& shapes, int threads,
                                                 int64_t batch, int repeats) {
  std::vector<ConvShapeSeconds> out;
  const std::unique_ptr<Backend> backend = make_cpu_backend(threads);
  for (const Window2d& shape : shapes) {
    if (std::any_of(out.begin(), out.end(),
                    [&](const ConvShapeSeconds& m) { return same_conv_shape(m.window, shape); })) {
      continue;
    }
    Window2d w = shape;
    w.batch = batch;
    const int64_t kernel = w.kernel_h * w.kernel_w * w.in_c * w.out_c;
    AlignedBuffer x(w.input_size()), dx(w.input_size()), y(w.output_size()), dy(w.output_size());
    AlignedBuffer k(kernel), dk(kernel), bias(w.out_c), dbias(w.out_c);
    std::fill(x.data(), x.data() + w.input_size(), 0.5f);
    std::fill(dy.data(), dy.data() + w.output_size(), 1e-3f);
    std::fill(k.data(), k.data() + kernel, 1e-2f);
    std::fill(bias.data(), bias.data() + w.out_c, 0.0f);
    const auto forward = [&] {
      backend->conv2d_forward(w, x.data(), k.data(), bias.data(), ActivationKind::relu, y.data());
    };
    const auto data = [&] {
      backend->conv2d_backward_data(w, dy.data(), k.data(), dx.data(), false);
    };
    const auto weights = [&] {
      backend->conv2d_backward_weights(w, x.data(), dy.data(), dk.data(), dbias.data(), false);
    };
    forward(), data(), weights();  // each primitive created and its memory touched once
    const double samples = static_cast<double>(batch);
    ConvShapeSeconds m;
    m.window = shape;
    m.window.batch = 1;
    m.batch = batch;
    m.forward = best_seconds(repeats, forward) / samples;
    m.backward_data = best_seconds(repeats, data) / samples;
    m.backward_weights = best_seconds(repeats, weights) / samples;
    out.push_back(m);
  }
  return out;
}

}  // namespace tandem::detail
