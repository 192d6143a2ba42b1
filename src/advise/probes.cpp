#include "advise/probes.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "advise/step_gemms.h"
#include "advise/step_run.h"
#include "advise/steps_at_once.h"
#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "optim/optimizer_kernel.h"
#include "parallel/bf16.h"
#include "parallel/device_group.h"
#include "parallel/shared_memory_communicator.h"
#include "profile/phase_timer.h"
#include "tandem/error.h"
#include "tandem/optimizers.h"

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

// The mean over the devices (the step's phases are their mean).
double mean(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
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
  // Tasks that outlast the spin: a round of empty tasks ends while its caller still spins,
  // which a step's forward and backward do not (docs/PERFORMANCE.md, "Devices that spin for
  // their next task").
  constexpr double kWork = 2 * kDeviceSpinSeconds;
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

std::vector<UpdateContention> update_contention(const std::vector<int64_t>& bytes, int devices,
                                                int threads, int repeats) {
  if (devices < 2) {
    throw Error("update_contention: 2 or more devices, got " + std::to_string(devices));
  }
  const std::unique_ptr<OptimizerKernel> kernel = make_optimizer_kernel(RMSprop());
  DeviceGroup group(plan_devices(devices, threads));
  std::vector<UpdateContention> out;
  for (const int64_t size : bytes) {
    const int64_t n = std::max<int64_t>(size / 4, int64_t{16} * devices);
    // Each device's own parameters, accumulator and gradients; one shared copy of the first
    // two.
    std::vector<AlignedBuffer> params, state, grads;
    for (int d = 0; d < devices; ++d) {
      params.emplace_back(n);
      state.emplace_back(n);
      grads.emplace_back(n);
      std::fill(params[d].data(), params[d].data() + n, 0.5f);
      std::fill(state[d].data(), state[d].data() + n, 0.f);
    }
    AlignedBuffer shared(n), shared_state(n);
    std::fill(shared.data(), shared.data() + n, 0.5f);
    std::fill(shared_state.data(), shared_state.data() + n, 0.f);
    std::vector<double> each(devices), sinks(devices);
    // Backward's gradients, then forward's read of the parameters: a float of every line.
    const auto prepare = [&](int d, const float* read, float value) {
      std::fill(grads[d].data(), grads[d].data() + n, value);
      double sum = 0;
      for (int64_t i = 0; i < n; i += 16) sum += read[i];
      sinks[d] += sum;
    };
    std::vector<double> alone, own, shard;
    float value = 1e-4f;
    int64_t iteration = 0;
    // Device d's update of params[begin, end) with its gradients, timed into each[d].
    const auto timed_update = [&](int d, float* w, float* s, int64_t begin, int64_t end) {
      float* slots[] = {s};
      const auto start = Clock::now();
      kernel->update(w, grads[d].data(), slots, begin, end, iteration, 1e-3, threads, 0);
      each[d] = seconds_since(start);
    };
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      value = -value;
      ++iteration;
      group.run([&](int d) {
        if (d != 0) return;
        prepare(0, params[0].data(), value);
        timed_update(0, params[0].data(), state[0].data(), 0, n);
      });
      alone.push_back(each[0]);
      group.run([&](int d) {
        prepare(d, params[d].data(), value);
        group.barrier().wait();
        timed_update(d, params[d].data(), state[d].data(), 0, n);
      });
      own.push_back(mean(each));
      group.run([&](int d) {
        prepare(d, shared.data(), value);
        group.barrier().wait();
        timed_update(d, shared.data(), shared_state.data(), n * d / devices, n * (d + 1) / devices);
      });
      shard.push_back(mean(each));
    }
    double read = 0;
    for (const double v : sinks) read += v;
    if (!std::isfinite(read)) throw Error("update_contention: the parameters read back non-finite");
    const double a = median_of(alone);
    out.push_back({4 * n, median_of(own) / a, median_of(shard) * devices / a});
  }
  return out;
}

std::vector<ExchangeSeconds> deterministic_exchange(const std::vector<int64_t>& bytes, int devices,
                                                    int shards, int repeats) {
  if (devices < 2 || shards < 1) {
    throw Error("deterministic_exchange: 2 or more devices and 1 or more shards, got " +
                std::to_string(devices) + " and " + std::to_string(shards));
  }
  DeviceGroup group(plan_devices(devices, 1));
  std::vector<ExchangeSeconds> out;
  for (const int64_t size : bytes) {
    const int64_t n = std::max<int64_t>(size / 4, 16);
    // Each device's parameters, gradients and shard copies.
    std::vector<AlignedBuffer> params, grads;
    std::vector<std::vector<AlignedBuffer>> copies(devices);
    std::vector<std::vector<float*>> sources(devices);
    for (int d = 0; d < devices; ++d) {
      params.emplace_back(n);
      grads.emplace_back(n);
      std::fill(params[d].data(), params[d].data() + n, 0.5f);
      for (int j = 0; j < shards; ++j) {
        copies[d].emplace_back(n);
        sources[d].push_back(copies[d].back().data());
      }
    }
    std::vector<double> copy_each(devices), tree_each(devices), sinks(devices);
    std::vector<double> copy, tree;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      group.run([&](int d) {
        double seconds = 0, sum = 0;
        for (int j = 0; j < shards; ++j) {
          // Backward: a float of every parameter line read, every gradient written.
          for (int64_t i = 0; i < n; i += 16) sum += params[d].data()[i];
          std::fill(grads[d].data(), grads[d].data() + n, 1e-3f * static_cast<float>(j + r));
          group.barrier().wait();
          const auto start = Clock::now();
          std::copy(grads[d].data(), grads[d].data() + n, sources[d][j]);
          seconds += seconds_since(start);
        }
        group.barrier().wait();
        const auto start = Clock::now();
        tree_sum(sources[d], grads[d].data(), 0, n);
        tree_each[d] = seconds_since(start);
        copy_each[d] = seconds / shards;
        sinks[d] += sum + grads[d].data()[n - 1];
      });
      copy.push_back(mean(copy_each));
      tree.push_back(mean(tree_each));
    }
    double read = 0;
    for (const double v : sinks) read += v;
    if (!std::isfinite(read)) throw Error("deterministic_exchange: the sums read back non-finite");
    out.push_back({4 * n, median_of(copy), median_of(tree)});
  }
  return out;
}

std::vector<int64_t> exchange_sizes(int64_t shared_cache, int devices, int shards) {
  const int64_t smallest = int64_t{256} << 10;
  const int64_t fits = shared_cache > 0
                           ? shared_cache / (std::max(devices, 1) * (std::max(shards, 1) + 2))
                           : int64_t{4} << 20;
  // Whole 4 KiB pages, within [256 KiB, 256 MiB].
  const int64_t largest = std::clamp(fits / 4096 * 4096, smallest, int64_t{256} << 20);
  std::vector<int64_t> sizes;
  for (int64_t b = smallest; b <= largest; b *= 2) sizes.push_back(b);
  if (sizes.back() < largest) sizes.push_back(largest);
  return sizes;
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

namespace {

// The steps at once at each of `rows` (distinct, ascending): each row count's passes once
// untimed (their GEMMs' primitives created), then `repeats` rounds over the rows; the best of
// the rounds and their median.
std::vector<StepsAtOnceSeconds> steps_at_once_seconds(StepsAtOnce& probe,
                                                      const std::vector<int64_t>& rows,
                                                      int repeats) {
  // Per row count, the rounds' forward alone, backward alone, forward shared, backward shared.
  std::vector<std::array<std::vector<double>, 4>> rounds(rows.size());
  for (const int64_t r : rows) {
    probe.alone(r);
    probe.shared(r);
  }
  for (int round = 0; round < std::max(repeats, 1); ++round) {
    for (size_t i = 0; i < rows.size(); ++i) {
      const StepsAtOnce::Seconds alone = probe.alone(rows[i]);
      const StepsAtOnce::Seconds shared = probe.shared(rows[i]);
      rounds[i][0].push_back(alone.forward);
      rounds[i][1].push_back(alone.backward);
      rounds[i][2].push_back(shared.forward);
      rounds[i][3].push_back(shared.backward);
    }
  }
  std::vector<StepsAtOnceSeconds> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto best = [&](int k) {
      return *std::min_element(rounds[i][k].begin(), rounds[i][k].end());
    };
    out.push_back({.rows = rows[i],
                   .forward_alone = best(0),
                   .backward_alone = best(1),
                   .forward_shared = best(2),
                   .backward_shared = best(3),
                   .median_forward_alone = median_of(rounds[i][0]),
                   .median_backward_alone = median_of(rounds[i][1]),
                   .median_forward_shared = median_of(rounds[i][2]),
                   .median_backward_shared = median_of(rounds[i][3])});
  }
  return out;
}

}  // namespace

std::vector<WeightGradShards> weight_grad_gemm_seconds(const std::vector<int64_t>& widths,
                                                       const std::vector<int64_t>& rows,
                                                       const std::vector<int>& devices, int threads,
                                                       int repeats) {
  std::vector<int> counts;
  for (const int n : devices) {
    if (n >= 2 && std::find(counts.begin(), counts.end(), n) == counts.end()) counts.push_back(n);
  }
  std::sort(counts.begin(), counts.end());
  if (widths.size() < 2 || rows.empty() || counts.empty()) return {};
  const std::unique_ptr<Backend> backend = make_cpu_backend(threads);
  const int64_t most_rows = *std::max_element(rows.begin(), rows.end());
  const size_t layers = widths.size() - 1;
  // Per layer: its input rows x (rows, in), its output gradient dz (rows, units) and its
  // kernel's gradient (in, units).
  std::vector<AlignedBuffer> x, dz, grad;
  for (size_t l = 0; l < layers; ++l) {
    x.emplace_back(most_rows * widths[l]);
    dz.emplace_back(most_rows * widths[l + 1]);
    grad.emplace_back(widths[l] * widths[l + 1]);
    std::fill(x[l].data(), x[l].data() + most_rows * widths[l], 0.5f);
    std::fill(dz[l].data(), dz[l].data() + most_rows * widths[l + 1], 1e-3f);
  }
  const auto whole = [&](int64_t r) {
    for (size_t l = layers; l-- > 0;) {
      backend->gemm({.m = widths[l],
                     .n = widths[l + 1],
                     .k = r,
                     .a = x[l].data(),
                     .trans_a = true,
                     .b = dz[l].data(),
                     .c = grad[l].data()});
    }
  };
  const auto shard = [&](int64_t r, int n) {
    for (size_t l = layers; l-- > 0;) {
      const int64_t in = widths[l], part = (in + n - 1) / n;
      for (int q = 0; q < n; ++q) {
        backend->gemm({.m = part,
                       .n = widths[l + 1],
                       .k = r,
                       .a = x[l].data(),
                       .trans_a = true,
                       .b = dz[l].data(),
                       .c = grad[l].data(),
                       .accumulate = q > 0,
                       .lda = in});
      }
    }
  };
  CacheEvictor evictor;
  StepGemms step(widths, most_rows, counts.back(), threads);
  std::vector<int64_t> distinct = rows;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  // Whole GEMMs per row count (shared by every device count), shards per device count.
  std::vector<WeightGradGemmSeconds> wholes;
  std::vector<WeightGradShards> out;
  for (const int64_t r : distinct) {
    whole(r);  // each GEMM's primitive created once
    step.whole(r);
    wholes.push_back(
        {.rows = r, .whole = 1e300, .whole_cold = 1e300, .whole_step = 1e300, .input_step = 1e300});
  }
  for (const int n : counts) {
    out.push_back({n, {}});
    for (const int64_t r : distinct) {
      shard(r, n);
      step.shard(r, n);
      out.back().points.push_back(
          {.rows = r, .shard = 1e300, .shard_cold = 1e300, .shard_step = 1e300});
    }
  }
  for (int round = 0; round < std::max(repeats, 1); ++round) {
    for (size_t i = 0; i < distinct.size(); ++i) {
      const int64_t r = distinct[i];
      WeightGradGemmSeconds& w = wholes[i];
      evictor.evict();
      w.whole_cold = std::min(w.whole_cold, seconds_of([&] { whole(r); }));
      w.whole = std::min(w.whole, seconds_of([&] { whole(r); }));
      const StepGemms::Seconds whole_step = step.whole(r);
      w.input_step = std::min(w.input_step, whole_step.input);
      w.whole_step = std::min(w.whole_step, whole_step.weight);
      for (WeightGradShards& s : out) {
        WeightGradGemmSeconds& m = s.points[i];
        evictor.evict();
        m.shard_cold = std::min(m.shard_cold, seconds_of([&] { shard(r, s.devices); }));
        m.shard = std::min(m.shard, seconds_of([&] { shard(r, s.devices); }));
        m.shard_step = std::min(m.shard_step, step.shard(r, s.devices).weight);
      }
    }
  }
  // The steps at once, one device count at a time (each holds every device's buffers).
  for (WeightGradShards& s : out) {
    StepsAtOnce at_once(widths, most_rows, s.devices, threads);
    s.at_once = steps_at_once_seconds(at_once, distinct, repeats);
  }
  for (WeightGradShards& s : out) {
    for (size_t i = 0; i < distinct.size(); ++i) {
      s.points[i].whole = wholes[i].whole;
      s.points[i].whole_cold = wholes[i].whole_cold;
      s.points[i].whole_step = wholes[i].whole_step;
      s.points[i].input_step = wholes[i].input_step;
    }
  }
  return out;
}

}  // namespace tandem::detail
