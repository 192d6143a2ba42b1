#include "advise/calibrate_conv.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <memory>
#include <vector>

#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/probes.h"
#include "advise/step_run.h"
#include "backend/timed_backend.h"
#include "tandem/zoo.h"

namespace tandem::detail {

using nlohmann::json;

void calibrate_conv_rate(const CalibrationPlan& plan, const StrategyOptions& one_device,
                         uint64_t& seed, const std::string& device_words,
                         const std::string& repeat_words, json& profile, json& sources,
                         json& measurements, std::ostream& log) {
  const int threads = plan.threads_per_device;
  std::vector<Window2d> shapes;
  std::vector<std::string> convnets;
  std::vector<std::string> names = zoo::names();
  // A saved model's shapes too: advise --model FILE then predicts them from their own
  // primitives' times, not from the rate of other shapes.
  if (!zoo::is_name(plan.conv_model)) names.push_back(plan.conv_model);
  for (const std::string& name : names) {
    const ModelCost cost = ModelCost::of(zoo::by_name_or_file(name));
    if (!cost.has_conv()) continue;
    convnets.push_back(name);
    for (const LayerCost& l : cost.layers) {
      if (l.kind == CostKind::conv) shapes.push_back(l.window);
    }
  }
  const std::vector<ConvShapeSeconds> measured =
      conv_shape_seconds(shapes, threads, plan.conv_batch, plan.repeats);
  json shapes_json = json::array();
  double primitive_seconds = 0;
  for (const ConvShapeSeconds& m : measured) {
    shapes_json.push_back(conv_shape_to_json(m));
    primitive_seconds += m.forward + m.backward_data + m.backward_weights;
  }
  profile["device"]["conv_shapes"] = shapes_json;
  log << fmt::format(
      "{} convolution shapes of {}: primitives timed alone, batch {}: {:.3f} ms per sample "
      "in all\n",
      measured.size(), fmt::join(convnets, ", "), plan.conv_batch, primitive_seconds * 1e3);
  // M's steps with every kernel timed: the convolutions' share of the step is measured,
  // not the step minus a model of the rest.
  auto kernels = std::make_shared<KernelSeconds>();
  StrategyOptions timed = one_device;
  timed.make_backend = [kernels](int t) {
    return make_timed_backend(make_cpu_backend(t), kernels);
  };
  StepRun conv(zoo::by_name_or_file(plan.conv_model), plan.conv_batch, timed);
  kernels->reset();  // the warm-up step is not counted
  for (int rep = 0; rep < plan.repeats; ++rep) conv.time(plan.steps, seed);
  const double step = conv.median_seconds();
  const double timed_steps = static_cast<double>(plan.repeats) * plan.steps;
  const double conv_seconds = (*kernels)[KernelKind::conv] / timed_steps;
  const ModelCost conv_cost = ModelCost::of(conv.model());
  HardwareProfile hw = parse_hardware_profile(profile, plan.name);
  calibrate_conv_to_conv_seconds(hw, conv_cost, plan.conv_batch, conv_seconds,
                                 "calibrate: --conv-model " + plan.conv_model);
  const double pool_seconds = (*kernels)[KernelKind::pool] / timed_steps;
  calibrate_pool_to_pool_seconds(hw, conv_cost, plan.conv_batch, pool_seconds,
                                 "calibrate: --conv-model " + plan.conv_model);
  const double predicted = one_device_step_seconds(hw, conv_cost, plan.conv_batch);
  profile["device"]["conv_flops"] = hw.device.conv_flops;
  profile["device"]["conv_step_scale"] = hw.device.conv_step_scale;
  const bool pools = kernels->calls[static_cast<size_t>(KernelKind::pool)] > 0;
  if (pools) {
    profile["device"]["pool_scale"] = hw.device.pool_scale;
    sources["device.pool_scale"] = fmt::format(
        "Measured: the same steps' pooling kernels took {:.3f} ms of each, {:.2f}x their "
        "bytes at device.memory_bandwidth",
        pool_seconds * 1e3, hw.device.pool_scale);
  }
  sources["device.conv_shapes"] = fmt::format(
      "Measured: the Conv2D shapes of {} ({} distinct), each one's oneDNN forward, "
      "backward-data and backward-weights primitives alone on {} at batch {}, best of {}",
      fmt::join(convnets, ", "), measured.size(), device_words, plan.conv_batch, plan.repeats);
  sources["device.conv_flops, device.conv_step_scale"] = fmt::format(
      "Measured: {} training {} at batch {}, {}, every kernel timed: its convolutions took "
      "{:.3f} ms of each step, conv_step_scale ({:.3f}) times their primitives' time alone; "
      "conv_flops: those primitives' own rate over that scale, for shapes not measured",
      device_words, plan.conv_model, plan.conv_batch, repeat_words, conv_seconds * 1e3,
      hw.device.conv_step_scale);
  json kernel_json = json::object();
  for (int k = 0; k < static_cast<int>(KernelKind::count); ++k) {
    const auto kind = static_cast<KernelKind>(k);
    kernel_json[kernel_kind_name(kind)] = (*kernels)[kind] / timed_steps;
  }
  measurements["conv_steps"] = {
      {"model", plan.conv_model},      {"batch", plan.conv_batch},
      {"step_seconds", step},          {"per_repetition", conv.seconds()},
      {"kernel_seconds", kernel_json}, {"predicted_step_seconds", predicted}};
  log << fmt::format(
      "{} step, batch {}: {:.3f} ms, of which convolutions {:.3f} ms ({:.2f}x their "
      "primitives alone, {:.1f} GFLOP/s); the profile predicts the step at {:.3f} ms "
      "({:+.0f}%)\n",
      plan.conv_model, plan.conv_batch, step * 1e3, conv_seconds * 1e3, hw.device.conv_step_scale,
      hw.device.conv_flops / 1e9, predicted * 1e3, (predicted / step - 1) * 100);
  if (pools) {
    log << fmt::format("{} pooling: {:.3f} ms per step, {:.2f}x its bytes at {:.1f} GB/s\n",
                       plan.conv_model, pool_seconds * 1e3, hw.device.pool_scale,
                       hw.device.memory_bandwidth / 1e9);
  }
}

}  // namespace tandem::detail
