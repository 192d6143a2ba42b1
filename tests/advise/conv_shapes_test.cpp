// Convolutions at their own shapes' measured speed (device.conv_shapes): a model's Conv2D
// layers carry their windows; a calibration step solves what a step adds around the
// primitives (conv_step_scale) and ties conv_flops to it, so the calibration model's
// step is reproduced and a shape not measured runs at conv_flops. calibrate itself solves
// them from the seconds a step spent in its convolutions, timed inside the step.
#include <gtest/gtest.h>

#include <limits>

#include "advise/cost_model.h"
#include "tandem/zoo.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

HardwareProfile cpu_profile() {
  HardwareProfile hw;
  hw.max_devices = 2;
  hw.device.threads = 1;
  hw.device.sustained_flops = 100e9;
  hw.device.memory_bandwidth = 20e9;
  hw.device.comm_uses_compute = true;
  hw.host_memory_bandwidth = hw.host_update_bandwidth = 20e9;
  hw.host_device = {.bandwidth = 10e9, .latency = 1e-6};
  hw.device_device = {.bandwidth = 20e9, .latency = 1e-6};
  return hw;
}

std::vector<const LayerCost*> convs(const ModelCost& m) {
  std::vector<const LayerCost*> out;
  for (const LayerCost& l : m.layers) {
    if (l.kind == CostKind::conv) out.push_back(&l);
  }
  return out;
}

// Each conv's primitives at `ns_per_flop` nanoseconds per FLOP of it.
void measure(HardwareProfile& hw, const ModelCost& m, double ns_per_flop) {
  for (const LayerCost* l : convs(m)) {
    const double data = l->backward_data ? l->forward_flops : 0;
    hw.device.conv_shapes.push_back({l->window, 32, l->forward_flops * ns_per_flop * 1e-9,
                                     l->forward_flops * ns_per_flop * 1e-9,
                                     (l->backward_flops - data) * ns_per_flop * 1e-9});
  }
}

TEST(ConvShapes, LayersCarryTheirWindows) {
  const ModelCost m = ModelCost::of(zoo::mnist_convnet());
  const auto c = convs(m);
  ASSERT_EQ(c.size(), 2u);
  // Conv2D(32, 3x3) on 28x28x1 (valid), then Conv2D(64, 3x3) on the pooled 13x13x32.
  EXPECT_EQ(c[0]->window.in_c, 1);
  EXPECT_EQ(c[0]->window.out_h, 26);
  EXPECT_EQ(c[0]->window.out_c, 32);
  EXPECT_FALSE(c[0]->backward_data);  // it reads the model's input
  EXPECT_EQ(c[1]->window.in_h, 13);
  EXPECT_EQ(c[1]->window.in_c, 32);
  EXPECT_EQ(c[1]->window.kernel_h, 3);
  EXPECT_TRUE(c[1]->backward_data);
  EXPECT_TRUE(same_conv_shape(c[1]->window, c[1]->window));
  EXPECT_FALSE(same_conv_shape(c[0]->window, c[1]->window));
}

TEST(ConvShapes, CalibrationReproducesItsStepAndSlowShapesCostMore) {
  const ModelCost google = ModelCost::of(zoo::minigooglenet());
  const ModelCost mnist = ModelCost::of(zoo::mnist_convnet());
  Scenario s;
  s.model = google;
  s.batch = 64;
  // Without shapes: one rate for every conv, as before.
  HardwareProfile plain = cpu_profile();
  calibrate_conv_to_step(plain, google, 64, 2.0, "test");
  EXPECT_NEAR(predict_all(plain, s, {1})[0].step_seconds, 2.0, 1e-9);
  EXPECT_EQ(plain.device.conv_step_scale, 0);
  // With every shape measured (at 0.01 ns per FLOP): the step is reproduced, and
  // conv_flops is the primitives' own rate over the scale.
  HardwareProfile shaped = cpu_profile();
  measure(shaped, google, 0.01);
  calibrate_conv_to_step(shaped, google, 64, 2.0, "test");
  EXPECT_NEAR(predict_all(shaped, s, {1})[0].step_seconds, 2.0, 1e-9);
  ASSERT_GT(shaped.device.conv_step_scale, 0);
  EXPECT_NEAR(shaped.device.conv_flops, 100e9 / shaped.device.conv_step_scale, 1e-3 * 100e9);
  // The same rate everywhere predicts what one rate did for another model...
  measure(shaped, mnist, 0.01);
  Scenario other = s;
  other.model = mnist;
  const double one_rate = predict_all(plain, other, {1})[0].step_seconds;
  EXPECT_NEAR(predict_all(shaped, other, {1})[0].step_seconds, one_rate, 1e-9);
  // ... and a shape measured slower (MNIST's first conv, whose reduction is only 3x3x1)
  // makes that model slower by exactly its extra primitive time, scaled.
  HardwareProfile slow_first = shaped;
  const LayerCost* first = convs(mnist)[0];
  for (ConvShapeSeconds& m : slow_first.device.conv_shapes) {
    if (same_conv_shape(m.window, first->window)) m.forward *= 3;
  }
  EXPECT_NEAR(predict_all(slow_first, other, {1})[0].step_seconds - one_rate,
              64 * 2 * first->forward_flops * 0.01e-9 * shaped.device.conv_step_scale, 1e-9);
  // A shape not measured runs at conv_flops: the same step as with one rate.
  HardwareProfile unmeasured = shaped;
  std::erase_if(unmeasured.device.conv_shapes, [&](const ConvShapeSeconds& m) {
    return same_conv_shape(m.window, first->window);
  });
  EXPECT_NEAR(predict_all(unmeasured, other, {1})[0].step_seconds, one_rate, 1e-9);
}

// From the convolutions' own seconds in a step (what calibrate times): the scale is those
// seconds over the primitives', the convolutions' part of the prediction is exactly those
// seconds, and the rest of the step is left to the other figures (not absorbed).
TEST(ConvShapes, CalibrationFromTheConvolutionsTimeInTheStep) {
  const ModelCost google = ModelCost::of(zoo::minigooglenet());
  HardwareProfile shaped = cpu_profile();
  measure(shaped, google, 0.01);
  const double primitives = 64 * 0.01e-9 * [&] {
    double flops = 0;
    for (const LayerCost* l : convs(google)) flops += l->forward_flops + l->backward_flops;
    return flops;
  }();
  calibrate_conv_to_conv_seconds(shaped, google, 64, 1.5 * primitives, "test");
  EXPECT_NEAR(shaped.device.conv_step_scale, 1.5, 1e-9);
  EXPECT_NEAR(shaped.device.conv_flops, 100e9 / 1.5, 1e-3 * 100e9);
  HardwareProfile free_convs = shaped;
  free_convs.device.conv_step_scale = 0;
  free_convs.device.conv_flops = std::numeric_limits<double>::infinity();
  EXPECT_NEAR(
      one_device_step_seconds(shaped, google, 64) - one_device_step_seconds(free_convs, google, 64),
      1.5 * primitives, 1e-9);
  // Without shapes, one rate: the convolutions' FLOPs over their seconds.
  HardwareProfile plain = cpu_profile();
  calibrate_conv_to_conv_seconds(plain, google, 64, 2 * primitives, "test");
  EXPECT_EQ(plain.device.conv_step_scale, 0);
  EXPECT_NEAR(plain.device.conv_flops, 100e9 / 2, 1e-3 * 100e9);
  // Nothing to solve from: a model without Conv2D, or no time in them.
  EXPECT_THROW(calibrate_conv_to_conv_seconds(plain, ModelCost::dense({784, 10}), 64, 1, "t"),
               ConfigError);
  EXPECT_THROW(calibrate_conv_to_conv_seconds(plain, google, 64, 0, "t"), ConfigError);
}

// Pooling layers stream their bytes at memory_bandwidth times pool_scale, solved from the
// seconds a step spent in its pooling kernels; other memory-bound layers are unaffected.
TEST(ConvShapes, PoolingAtItsMeasuredScale) {
  const ModelCost mnist = ModelCost::of(zoo::mnist_convnet());
  double pool_bytes = 0;
  int pools = 0, memory = 0;
  for (const LayerCost& l : mnist.layers) {
    if (l.kind == CostKind::pool) {
      pool_bytes += 64 * (l.forward_bytes + l.backward_bytes);
      ++pools;
    }
    memory += l.kind == CostKind::memory;
  }
  ASSERT_EQ(pools, 2);   // the two MaxPooling2D
  ASSERT_EQ(memory, 2);  // Flatten and Dropout stay memory-bound layers
  HardwareProfile hw = cpu_profile();
  const double before = one_device_step_seconds(hw, mnist, 64);
  calibrate_pool_to_pool_seconds(hw, mnist, 64, 3 * pool_bytes / 20e9, "test");
  EXPECT_NEAR(hw.device.pool_scale, 3, 1e-9);
  EXPECT_NEAR(one_device_step_seconds(hw, mnist, 64) - before, 2 * pool_bytes / 20e9, 1e-12);
  // With a layer overhead, it is taken out of the measured seconds first.
  HardwareProfile overhead = cpu_profile();
  overhead.device.layer_overhead = 1e-6;
  calibrate_pool_to_pool_seconds(overhead, mnist, 64, 4e-6 + 3 * pool_bytes / 20e9, "test");
  EXPECT_NEAR(overhead.device.pool_scale, 3, 1e-9);
  // A model without pooling leaves the scale; no time in the pooling kernels is refused.
  HardwareProfile dense = cpu_profile();
  calibrate_pool_to_pool_seconds(dense, ModelCost::dense({784, 10}), 64, 1, "test");
  EXPECT_EQ(dense.device.pool_scale, 1);
  EXPECT_THROW(calibrate_pool_to_pool_seconds(dense, mnist, 64, 0, "test"), ConfigError);
}

}  // namespace
}  // namespace tandem::detail
