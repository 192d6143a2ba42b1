#include "advise/steps_at_once.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "optim/optimizer_kernel.h"
#include "parallel/buckets.h"
#include "tandem/error.h"
#include "tandem/optimizers.h"

namespace tandem::detail {
namespace {

const std::vector<int64_t> kWidths = {33, 24, 17, 10};

// The largest difference between rows [i0, i1) of layer l's kernel gradient in `buffer` (a
// gradient buffer laid out as the model's; by default `device`'s) and `times` times the sum
// over devices q in `from` of input(l, q)^T (in, rows) . output_gradient(l, q) (rows, units),
// as the probe left them, and that sum's largest magnitude.
struct Check {
  double error = 0, largest = 0;
};
Check kernel_gradient(const StepsAtOnce& p, size_t l, int device, const std::vector<int>& from,
                      int64_t rows, int64_t i0, int64_t i1, const float* buffer = nullptr,
                      int times = 1) {
  const int64_t in = kWidths[l], units = kWidths[l + 1];
  const float* g = (buffer != nullptr ? buffer : p.gradients(device)) + p.kernel_offset(l);
  Check c;
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = 0; j < units; ++j) {
      double want = 0;
      for (const int q : from) {
        for (int64_t r = 0; r < rows; ++r) {
          want += static_cast<double>(p.input(l, q)[r * in + i]) *
                  static_cast<double>(p.output_gradient(l, q)[r * units + j]);
        }
      }
      want *= times;
      c.error = std::max(c.error, std::abs(want - g[i * units + j]));
      c.largest = std::max(c.largest, std::abs(want));
    }
  }
  return c;
}

// Each pass computes the gradients it times: alone, device 0's whole kernel gradients from its
// own rows; shared, each device's rows [d * ceil(in / 2), ...) of every kernel from both
// devices' rows, at fewer rows than the buffers hold too. The gradients are not all zero (the
// relu units stay open), so a wrong offset or leading dimension shows.
TEST(StepsAtOnce, EachPassComputesTheGradientsItTimes) {
  StepsAtOnce probe(kWidths, 8, 2, 1);
  for (const int64_t rows : {8, 5}) {
    probe.alone(rows);
    for (size_t l = 0; l + 1 < kWidths.size(); ++l) {
      const Check c = kernel_gradient(probe, l, 0, {0}, rows, 0, kWidths[l]);
      EXPECT_GT(c.largest, 1e-6) << "layer " << l;
      EXPECT_LE(c.error, 1e-4 * c.largest) << "alone, layer " << l << ", " << rows << " rows";
    }
    probe.shared(rows);
    for (size_t l = 0; l + 1 < kWidths.size(); ++l) {
      const int64_t per = (kWidths[l] + 1) / 2;
      for (const int d : {0, 1}) {
        const int64_t i0 = per * d, i1 = std::min(kWidths[l], i0 + per);
        const Check c = kernel_gradient(probe, l, d, {0, 1}, rows, i0, i1);
        EXPECT_GT(c.largest, 1e-6) << "layer " << l << ", device " << d;
        EXPECT_LE(c.error, 1e-4 * c.largest)
            << "shared, layer " << l << ", device " << d << ", " << rows << " rows";
      }
    }
  }
}

// Deterministic micro-shards: each micro-shard's whole kernel gradients from its device's own
// rows, copied aside (each device's rows differ from the other's; the parameters and rows do
// not change within a pass, so every micro-shard's are the same), and their sum in the
// device's gradient buffer, which the next pass's update reads; 1 to 64 micro-shards per device.
TEST(StepsAtOnce, MicroShardsComputeEachDevicesWholeGradients) {
  StepsAtOnce probe(kWidths, 8, 2, 1);
  for (const int64_t rows : {8, 5}) {
    for (const int local : {2, 1, 3}) {
      const StepsAtOnce::Seconds t = probe.micro_shards(rows, local);
      EXPECT_GT(t.forward, 0);
      EXPECT_GT(t.backward, 0);
      for (size_t l = 0; l + 1 < kWidths.size(); ++l) {
        for (const int d : {0, 1}) {
          for (int j = 0; j < local; ++j) {
            const Check c =
                kernel_gradient(probe, l, d, {d}, rows, 0, kWidths[l], probe.aside(d, j));
            EXPECT_GT(c.largest, 1e-6) << "layer " << l << ", device " << d;
            EXPECT_LE(c.error, 1e-4 * c.largest)
                << "micro-shard " << j << " of " << local << ", layer " << l << ", device " << d
                << ", " << rows << " rows";
          }
          const Check sum = kernel_gradient(probe, l, d, {d}, rows, 0, kWidths[l], nullptr, local);
          EXPECT_LE(sum.error, 1e-4 * sum.largest)
              << "the sum of " << local << " micro-shards, layer " << l << ", device " << d;
          // Another device's rows give other gradients: the check tells them apart.
          const Check other =
              kernel_gradient(probe, l, d, {1 - d}, rows, 0, kWidths[l], probe.aside(d, 0));
          EXPECT_GT(other.error, 1e-2 * other.largest) << "layer " << l << ", device " << d;
        }
      }
    }
  }
  EXPECT_THROW(probe.micro_shards(9, 2), ConfigError);
  EXPECT_THROW(probe.micro_shards(8, 0), ConfigError);
  EXPECT_THROW(probe.micro_shards(8, 65), ConfigError);
}

// A mean of passes, field by field, over as many as it is given; none: zeros.
TEST(StepsAtOnce, OwnPassesAreAveragedOverTheirCount) {
  const std::vector<StepsAtOnce::Seconds> passes = {
      {1, 10, 0.5, 2}, {2, 20, 1.5, 4}, {3, 30, 0, 6}, {6, 60, 2, 8}};
  const StepsAtOnce::Seconds m = StepsAtOnce::mean_of(passes);
  EXPECT_DOUBLE_EQ(m.forward, 3);
  EXPECT_DOUBLE_EQ(m.backward, 30);
  EXPECT_DOUBLE_EQ(m.wait, 1);
  EXPECT_DOUBLE_EQ(m.exchange, 5);
  const StepsAtOnce::Seconds two = StepsAtOnce::mean_of({passes[0], passes[1]});
  EXPECT_DOUBLE_EQ(two.forward, 1.5);
  EXPECT_DOUBLE_EQ(two.exchange, 3);
  const StepsAtOnce::Seconds none = StepsAtOnce::mean_of({});
  EXPECT_EQ(none.forward, 0);
  EXPECT_EQ(none.exchange, 0);
}

// Own copies, as the all-reduce reducer's step: after the pass's all-reduce each device's whole
// kernel gradients are both devices' rows' sum (not its own rows' alone), its forward over its
// own copy of the parameters (the first layer's output is relu(x . kernel + bias) of that copy,
// which after the updates differs from the shared buffer, which the pass leaves alone); the
// copies, updated from the same sums, stay equal; a wait of 0 or more, and the all-reduce from
// the backward's end no shorter than it (it cannot end before the last device posts).
TEST(StepsAtOnce, OwnCopiesComputeEachDevicesStepOverItsCopy) {
  StepsAtOnce probe(kWidths, 8, 2, 1);
  EXPECT_EQ(probe.own_parameters(0), nullptr);
  const std::vector<float> shared(probe.parameters(), probe.parameters() + probe.parameter_count());
  for (const int64_t rows : {8, 5}) {
    const StepsAtOnce::Seconds t = probe.own(rows);
    // The mean of the timed passes: as many as kOwnTimedPasses (the untimed first one left
    // out), each timing something.
    const std::vector<StepsAtOnce::Seconds>& passes = probe.own_passes();
    ASSERT_EQ(passes.size(), static_cast<size_t>(StepsAtOnce::kOwnTimedPasses));
    for (const StepsAtOnce::Seconds& p : passes) {
      EXPECT_GT(p.forward, 0);
      EXPECT_GT(p.backward, 0);
      EXPECT_GE(p.exchange, p.wait);
    }
    const StepsAtOnce::Seconds mean = StepsAtOnce::mean_of(passes);
    EXPECT_EQ(t.forward, mean.forward);
    EXPECT_EQ(t.backward, mean.backward);
    EXPECT_EQ(t.wait, mean.wait);
    EXPECT_EQ(t.exchange, mean.exchange);
    EXPECT_GT(t.forward, 0);
    EXPECT_GT(t.backward, 0);
    EXPECT_GE(t.wait, 0);
    EXPECT_TRUE(std::isfinite(t.wait));
    EXPECT_GT(t.exchange, 0);
    EXPECT_GE(t.exchange, t.wait);
    EXPECT_TRUE(std::isfinite(t.exchange));
    for (size_t l = 0; l + 1 < kWidths.size(); ++l) {
      for (const int d : {0, 1}) {
        const Check c = kernel_gradient(probe, l, d, {0, 1}, rows, 0, kWidths[l]);
        EXPECT_GT(c.largest, 1e-6) << "layer " << l << ", device " << d;
        EXPECT_LE(c.error, 1e-4 * c.largest)
            << "own, layer " << l << ", device " << d << ", " << rows << " rows";
        const Check mine = kernel_gradient(probe, l, d, {d}, rows, 0, kWidths[l]);
        EXPECT_GT(mine.error, 1e-2 * mine.largest) << "layer " << l << ", device " << d;
      }
    }
    // The first layer's output on each device from its own copy.
    const int64_t in = kWidths[0], units = kWidths[1];
    for (const int d : {0, 1}) {
      const float* w = probe.own_parameters(d);
      ASSERT_NE(w, nullptr);
      double error = 0, largest = 0, from_shared = 0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < units; ++j) {
          double z = w[in * units + j], zs = shared[in * units + j];
          for (int64_t i = 0; i < in; ++i) {
            z += static_cast<double>(probe.input(0, d)[r * in + i]) * w[i * units + j];
            zs += static_cast<double>(probe.input(0, d)[r * in + i]) * shared[i * units + j];
          }
          const double got = probe.input(1, d)[r * units + j];
          error = std::max(error, std::abs(std::max(z, 0.0) - got));
          from_shared = std::max(from_shared, std::abs(std::max(zs, 0.0) - got));
          largest = std::max(largest, std::abs(z));
        }
      }
      EXPECT_LE(error, 1e-4 * largest) << "device " << d << "'s forward, " << rows << " rows";
      EXPECT_GT(from_shared, 1e-3 * largest) << "device " << d << " read its own copy";
      // Backward's input gradient of layer 1's input, dz(1) (rows, in1) = dz(2) (rows, units1)
      // . kernel1^T, from the same copy.
      const int64_t in1 = kWidths[1], units1 = kWidths[2];
      const float* k1 = w + probe.kernel_offset(1);
      const float* k1_shared = shared.data() + probe.kernel_offset(1);
      double g_error = 0, g_largest = 0, g_from_shared = 0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < in1; ++i) {
          double want = 0, want_shared = 0;
          for (int64_t j = 0; j < units1; ++j) {
            const double dz2 = probe.output_gradient(1, d)[r * units1 + j];
            want += dz2 * k1[i * units1 + j];
            want_shared += dz2 * k1_shared[i * units1 + j];
          }
          const double got = probe.output_gradient(0, d)[r * in1 + i];
          g_error = std::max(g_error, std::abs(want - got));
          g_from_shared = std::max(g_from_shared, std::abs(want_shared - got));
          g_largest = std::max(g_largest, std::abs(want));
        }
      }
      EXPECT_GT(g_largest, 1e-9);
      EXPECT_LE(g_error, 1e-4 * g_largest) << "device " << d << "'s input gradient";
      EXPECT_GT(g_from_shared, 1e-3 * g_largest) << "device " << d << "'s backward, own copy";
    }
  }
  double apart = 0, moved = 0, shared_moved = 0;
  for (int64_t i = 0; i < probe.parameter_count(); ++i) {
    apart = std::max(apart, std::abs(static_cast<double>(probe.own_parameters(0)[i]) -
                                     probe.own_parameters(1)[i]));
    moved = std::max(moved, std::abs(static_cast<double>(probe.own_parameters(0)[i]) - shared[i]));
    shared_moved =
        std::max(shared_moved, std::abs(static_cast<double>(probe.parameters()[i]) - shared[i]));
  }
  EXPECT_EQ(apart, 0);  // both copies updated from the same summed gradients
  EXPECT_GT(moved, 1e-5);
  EXPECT_EQ(shared_moved, 0);
  // The shared accumulator too: each copy's update has its own.
  for (int64_t i = 0; i < probe.parameter_count(); ++i) {
    ASSERT_EQ(probe.accumulator()[i], 0.0f) << "the shared accumulator at " << i;
  }
  EXPECT_THROW(probe.own(9), ConfigError);
  EXPECT_THROW(probe.own(0), ConfigError);
  // One device waits for none and all-reduces nothing.
  StepsAtOnce alone(kWidths, 8, 1, 1);
  const StepsAtOnce::Seconds one = alone.own(8);
  EXPECT_EQ(one.wait, 0);
  EXPECT_EQ(one.exchange, 0);
}

// The wait for the last device: each device's end against the last one's, the devices' mean.
TEST(StepsAtOnce, TheWaitIsTheDevicesMeanBehindTheLast) {
  const Clock::time_point t0 = Clock::now();
  using std::chrono::microseconds;
  EXPECT_DOUBLE_EQ(mean_wait_for_last({}), 0);
  EXPECT_DOUBLE_EQ(mean_wait_for_last({t0}), 0);
  // Ends at 0, 3000 and 1000 us: 3000, 0 and 2000 behind the last.
  EXPECT_NEAR(mean_wait_for_last({t0, t0 + microseconds(3000), t0 + microseconds(1000)}), 5e-3 / 3,
              1e-12);
  EXPECT_NEAR(mean_wait_for_last({t0 + microseconds(40), t0}), 20e-6, 1e-12);
}

// The update a micro-shards pass starts with, as the sharded reducer's: each device's aligned
// half of the parameters moves by RMSprop on both devices' gradients summed (what the last
// pass left), not on its own device's alone.
TEST(StepsAtOnce, MicroShardsUpdateFromEveryDevicesGradients) {
  StepsAtOnce probe(kWidths, 8, 2, 1);
  probe.micro_shards(8, 2);
  const int64_t n = probe.parameter_count();
  const auto rmsprop = [&](const std::vector<float>& g) {
    std::vector<float> w(probe.parameters(), probe.parameters() + n);
    std::vector<float> s(probe.accumulator(), probe.accumulator() + n);
    float* slots[] = {s.data()};
    make_optimizer_kernel(RMSprop())->update(w.data(), g.data(), slots, 0, n, 1, 1e-3, 1, 0);
    return w;
  };
  std::vector<float> summed(n), own(n);
  const int64_t half = aligned_share(n, 2, 1).first;
  for (int64_t i = 0; i < n; ++i) {
    summed[i] = probe.gradients(0)[i] + probe.gradients(1)[i];
    own[i] = probe.gradients(i < half ? 0 : 1)[i];
  }
  const std::vector<float> want = rmsprop(summed), wrong = rmsprop(own);
  const std::vector<float> before(probe.parameters(), probe.parameters() + n);
  probe.summed_updates();
  double error = 0, moved = 0, apart = 0;
  for (int64_t i = 0; i < n; ++i) {
    error = std::max(error, std::abs(static_cast<double>(probe.parameters()[i]) - want[i]));
    moved = std::max(moved, std::abs(static_cast<double>(want[i]) - before[i]));
    apart = std::max(apart, std::abs(static_cast<double>(want[i]) - wrong[i]));
  }
  EXPECT_GT(moved, 1e-5);
  EXPECT_GT(apart, 1e-5);  // the check tells the sum from each device's own gradients
  EXPECT_LE(error, 1e-3 * apart) << "the parameters after the micro-shards' update";
}

// Both passes take time on one device and on two at once (a broken clock or a pass that runs
// nothing would give 0); more rows than the buffers hold, a model without a layer, no devices
// or no rows are refused.
TEST(StepsAtOnce, AloneAndSharedStepsTakeTime) {
  for (const int devices : {1, 2}) {
    StepsAtOnce probe({32, 24, 16, 10}, 8, devices, 1);
    for (const int64_t rows : {8, 3}) {
      const StepsAtOnce::Seconds alone = probe.alone(rows);
      const StepsAtOnce::Seconds shared = probe.shared(rows);
      for (const double t : {alone.forward, alone.backward, shared.forward, shared.backward}) {
        EXPECT_GT(t, 0) << devices << " devices, " << rows << " rows";
        EXPECT_TRUE(std::isfinite(t));
      }
    }
    EXPECT_THROW(probe.alone(9), ConfigError);
    EXPECT_THROW(probe.shared(0), ConfigError);
  }
  EXPECT_THROW(StepsAtOnce({32}, 8, 2, 1), ConfigError);
  EXPECT_THROW(StepsAtOnce({32, 10}, 8, 0, 1), ConfigError);
  EXPECT_THROW(StepsAtOnce({32, 10}, 0, 2, 1), ConfigError);
}

}  // namespace
}  // namespace tandem::detail
