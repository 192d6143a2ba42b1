#include "advise/weight_grad_probes.h"

#include <algorithm>
#include <array>
#include <memory>

#include "advise/probes.h"
#include "advise/step_gemms.h"
#include "advise/step_run.h"
#include "advise/steps_at_once.h"
#include "advise/window_check.h"
#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "parallel/strategy.h"
#include "profile/phase_timer.h"

namespace tandem::detail {
namespace {

// The steps at once at each of `rows` (distinct, ascending), and their micro-shards, `local`
// per device (0: none): each row count's passes once untimed (their GEMMs' primitives created),
// then `repeats` rounds over the rows, each row count's passes in a window of their own
// (in_quiet_windows: timed again where the devices' cores were apart); the best of the rounds
// and their median, and in `window` where they ran.
std::vector<StepsAtOnceSeconds> steps_at_once_seconds(StepsAtOnce& probe,
                                                      const std::vector<int64_t>& rows, int local,
                                                      int repeats, ProbeWindow& window) {
  for (const int64_t r : rows) {
    probe.alone(r);
    probe.shared(r);
    if (local > 0) probe.micro_shards(r, local);
    probe.own(r);
  }
  // Per unit (a round's row count, rounds after each other): the forward and backward alone,
  // shared, micro-shards and own copies, and the own copies' wait and all-reduce.
  const int units = std::max(repeats, 1) * static_cast<int>(rows.size());
  const std::vector<std::array<double, 10>> kept = in_quiet_windows(
      probe.group(), units,
      [&](int unit) {
        const int64_t r = rows[static_cast<size_t>(unit) % rows.size()];
        const StepsAtOnce::Seconds timed[] = {
            probe.alone(r), probe.shared(r),
            local > 0 ? probe.micro_shards(r, local) : StepsAtOnce::Seconds{}, probe.own(r)};
        std::array<double, 10> v;
        for (size_t k = 0; k < 4; ++k) {
          v[2 * k] = timed[k].forward;
          v[2 * k + 1] = timed[k].backward;
        }
        v[8] = timed[3].wait;
        v[9] = timed[3].exchange;
        return v;
      },
      window);
  // Per row count, each of the ten over the rounds.
  std::vector<std::array<std::vector<double>, 10>> rounds(rows.size());
  for (size_t unit = 0; unit < kept.size(); ++unit) {
    for (size_t k = 0; k < 10; ++k) rounds[unit % rows.size()][k].push_back(kept[unit][k]);
  }
  std::vector<StepsAtOnceSeconds> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto of_rounds = [&](auto&& pick) {
      std::array<double, 10> v;
      for (size_t k = 0; k < v.size(); ++k) v[k] = pick(rounds[i][k]);
      return StepsAtOnceTimes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]};
    };
    out.push_back({.rows = rows[i],
                   .best = of_rounds([](const std::vector<double>& v) {
                     return *std::min_element(v.begin(), v.end());
                   }),
                   .median = of_rounds([](const std::vector<double>& v) { return median_of(v); })});
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
    // Deterministic mode runs on a power of two of devices only (mirrored.cpp).
    const bool deterministic = (s.devices & (s.devices - 1)) == 0;
    s.micro_shards =
        deterministic ? std::max(StrategyOptions{}.deterministic_shards / s.devices, 1) : 0;
    s.at_once = steps_at_once_seconds(at_once, distinct, s.micro_shards, repeats, s.at_once_window);
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
