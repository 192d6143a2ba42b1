#include "advise/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "advise/algorithms.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Samples one step trains.
int64_t step_samples(const Scenario& s) {
  return s.per_device_batch ? s.batch * s.devices * s.ranks : s.batch;
}

void check(const Scenario& s) {
  if (s.model.layers.empty()) throw ConfigError("advise: the model has no layers");
  if (s.devices < 1) throw ConfigError("advise: devices must be >= 1");
  if (s.ranks < 1) throw ConfigError("advise: ranks must be >= 1");
  if (s.batch < 1) throw ConfigError("advise: batch size must be >= 1");
  if (!s.per_device_batch && s.batch < s.devices * s.ranks) {
    throw ConfigError("advise: batch size " + std::to_string(s.batch) + " is smaller than " +
                      std::to_string(s.devices * s.ranks) + " devices: some would have no samples");
  }
  if (s.bucket_bytes <= 0 || s.first_bucket_bytes <= 0) {
    throw ConfigError("advise: bucket size must be > 0");
  }
  if (s.samples <= 0 || s.epochs <= 0) throw ConfigError("advise: samples and epochs must be > 0");
  if (s.deterministic && s.deterministic_shards < 1) {
    throw ConfigError("advise: deterministic micro-shards must be >= 1");
  }
}

// One device's step (calibration inverts it).
Prediction one_device(const HardwareProfile& hw, const Scenario& s) {
  Scenario one = s;
  one.devices = 1;
  one.ranks = 1;
  one.deterministic = false;
  one.strategy = StrategyKind::mirrored;
  return simulate(hw, one, Algorithm::single_device);
}

std::string biggest_phase(const Prediction& p) {
  std::string name;
  double most = -1;
  for (const auto& [k, v] : p.phases) {
    if (v > most) {
      most = v;
      name = k;
    }
  }
  return name;
}

}  // namespace

ModelCost ModelCost::dense(const std::vector<int64_t>& widths) {
  if (widths.size() < 2) throw ConfigError("advise: a model needs an input and an output width");
  ModelCost m;
  m.input_size = widths.front();
  m.widths = widths;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    if (widths[i] <= 0 || widths[i + 1] <= 0) {
      throw ConfigError("advise: layer widths must be > 0");
    }
    LayerCost l;
    l.name = "dense_" + std::to_string(i);
    l.params = widths[i] * widths[i + 1] + widths[i + 1];
    l.forward_flops = 2.0 * static_cast<double>(widths[i] * widths[i + 1]);
    // The weight gradient, and the input gradient except for the first layer.
    l.backward_flops = l.forward_flops * (i == 0 ? 1 : 2);
    m.layers.push_back(l);
  }
  return m;
}

int64_t ModelCost::params() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.params;
  return n;
}

double ModelCost::step_flops(int64_t rows) const {
  double f = 0;
  for (const auto& l : layers) f += l.forward_flops + l.backward_flops;
  return f * static_cast<double>(rows);
}

bool ModelCost::has_conv() const {
  return std::any_of(layers.begin(), layers.end(),
                     [](const LayerCost& l) { return l.kind == CostKind::conv; });
}

void calibrate_device(HardwareProfile& hw, const nlohmann::json& c, const std::string& where) {
  Scenario s;
  double seconds = 0;
  try {
    s.model = ModelCost::dense(c.at("widths").get<std::vector<int64_t>>());
    s.batch = c.at("batch").get<int64_t>();
    s.samples = c.at("samples").get<int64_t>();
    s.epochs = c.at("epochs").get<int>();
    s.update_passes = c.value("update_passes", 5);
    seconds = c.at("seconds").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(where +
                      ": calibration needs numbers widths, batch, samples, epochs, "
                      "seconds: " +
                      e.what());
  }
  if (!(seconds > 0) || s.batch <= 0 || s.samples <= 0 || s.epochs <= 0) {
    throw ConfigError(where + ": calibration seconds, batch, samples and epochs must be > 0");
  }
  // The step time is fixed costs plus GEMM time, which scales as 1 / sustained_flops:
  // predict at a reference rate (of the same magnitude, for precision), then solve.
  constexpr double kReference = 1e12;
  HardwareProfile unit = hw;
  unit.device.sustained_flops = kReference;
  unit.device.layer_overhead = 0;
  unit.device.step_overhead = 0;
  const double steps = std::ceil(static_cast<double>(s.samples) / static_cast<double>(s.batch));
  const double target = seconds / (steps * s.epochs);
  const Prediction p = one_device(unit, s);
  const double gemm = p.phases.at("compute");  // seconds at the reference rate
  const double fixed = p.step_seconds - gemm +
                       hw.device.layer_overhead * 2.0 * static_cast<double>(s.model.layers.size()) +
                       hw.device.step_overhead;
  if (!(target > fixed)) {
    throw ConfigError(where + ": calibration time " + std::to_string(seconds) +
                      " s is below the profile's fixed costs per step");
  }
  hw.device.sustained_flops = kReference * gemm / (target - fixed);
}

void calibrate_to_step(HardwareProfile& hw, const std::vector<int64_t>& widths, int64_t batch,
                       double step_seconds) {
  calibrate_device(hw,
                   {{"widths", widths},
                    {"batch", batch},
                    {"samples", batch},
                    {"epochs", 1},
                    {"seconds", step_seconds}},
                   hw.name + " (calibrated with a measured step)");
}

const ConvShapeSeconds* conv_shape_of(const std::vector<ConvShapeSeconds>& shapes,
                                      const LayerCost& l) {
  if (l.kind != CostKind::conv) return nullptr;
  for (const ConvShapeSeconds& c : shapes) {
    if (same_conv_shape(c.window, l.window)) return &c;
  }
  return nullptr;
}

double conv_primitive_seconds(const ConvShapeSeconds& m, const LayerCost& l, bool backward) {
  if (!backward) return m.forward;
  return m.backward_weights + (l.backward_data ? m.backward_data : 0);
}

void calibrate_conv_to_conv_seconds(HardwareProfile& hw, const ModelCost& model, int64_t batch,
                                    double conv_seconds, const std::string& where) {
  if (!model.has_conv()) throw ConfigError(where + ": the calibration model has no Conv2D");
  if (batch <= 0 || !(conv_seconds > 0)) {
    throw ConfigError(where + ": calibration batch and convolution seconds must be > 0");
  }
  // Convolutions of a measured shape take scale x their primitives' seconds (P in all), the
  // others their FLOPs (U) at conv_flops; conv_flops is tied to the scale as the measured
  // layers' own rate (their FLOPs / P) over it, so conv_seconds = scale x (P + U / rate)
  // solves for both. Without measured shapes: conv_seconds = all FLOPs / conv_flops.
  const double b = static_cast<double>(batch);
  double primitives = 0, measured_flops = 0, other_flops = 0;
  for (const LayerCost& l : model.layers) {
    if (l.kind != CostKind::conv) continue;
    const double flops = (l.forward_flops + l.backward_flops) * b;
    if (const ConvShapeSeconds* own = conv_shape_of(hw.device.conv_shapes, l)) {
      primitives +=
          b * (conv_primitive_seconds(*own, l, false) + conv_primitive_seconds(*own, l, true));
      measured_flops += flops;
    } else {
      other_flops += flops;
    }
  }
  if (primitives > 0) {
    const double rate = measured_flops / primitives;
    const double scale = conv_seconds / (primitives + other_flops / rate);
    hw.device.conv_step_scale = scale;
    hw.device.conv_flops = rate / scale;
  } else {
    hw.device.conv_flops = other_flops / conv_seconds;
  }
}

void calibrate_conv_to_step(HardwareProfile& hw, const ModelCost& model, int64_t batch,
                            double step_seconds, const std::string& where) {
  if (!model.has_conv()) throw ConfigError(where + ": the calibration model has no Conv2D");
  if (batch <= 0 || !(step_seconds > 0)) {
    throw ConfigError(where + ": calibration batch and step seconds must be > 0");
  }
  // The step is fixed costs plus convolution time.
  HardwareProfile no_conv = hw;  // every convolution free: what is left is fixed
  no_conv.device.conv_step_scale = 0;
  no_conv.device.conv_flops = std::numeric_limits<double>::infinity();
  const double fixed = one_device_step_seconds(no_conv, model, batch);
  if (!(step_seconds > fixed)) {
    throw ConfigError(where + ": calibration step of " + std::to_string(step_seconds) +
                      " s is below the model's other costs on this profile (" +
                      std::to_string(fixed) + " s)");
  }
  calibrate_conv_to_conv_seconds(hw, model, batch, step_seconds - fixed, where);
}

void calibrate_pool_to_pool_seconds(HardwareProfile& hw, const ModelCost& model, int64_t batch,
                                    double pool_seconds, const std::string& where) {
  // pool_seconds = each pooling pass's layer_overhead + pool_scale x its bytes / bandwidth.
  double bytes = 0, overhead = 0;
  for (const LayerCost& l : model.layers) {
    if (l.kind != CostKind::pool) continue;
    bytes += static_cast<double>(batch) * (l.forward_bytes + l.backward_bytes);
    overhead += 2 * hw.device.layer_overhead;
  }
  if (bytes <= 0) return;
  if (!(pool_seconds > overhead) || !(hw.device.memory_bandwidth > 0)) {
    throw ConfigError(where + ": the pooling layers' seconds (" + std::to_string(pool_seconds) +
                      ") must exceed their layer overheads and the memory bandwidth be > 0");
  }
  hw.device.pool_scale = (pool_seconds - overhead) / (bytes / hw.device.memory_bandwidth);
}

double one_device_step_seconds(const HardwareProfile& hw, const ModelCost& model, int64_t batch) {
  Scenario s;
  s.model = model;
  s.batch = batch;
  return one_device(hw, s).step_seconds;
}

const DenseRateCurve* own_dense_rate(const HardwareProfile& hw, const ModelCost& model) {
  if (model.widths.empty()) return nullptr;
  const auto curve =
      std::find_if(hw.device.dense_rates.begin(), hw.device.dense_rates.end(),
                   [&](const DenseRateCurve& c) { return c.widths == model.widths; });
  return curve == hw.device.dense_rates.end() ? nullptr : &*curve;
}

Prediction predict(const HardwareProfile& hw, const Scenario& s) {
  check(s);
  const Algorithm algorithm = algorithm_for(hw, s);
  // A rate curve measured on this very model replaces the profile's general one.
  const DenseRateCurve* curve = own_dense_rate(hw, s.model);
  Prediction p;
  if (curve != nullptr) {
    HardwareProfile own = hw;
    own.device.sustained_flops = curve->sustained_flops;
    own.device.half_rows = curve->half_rows;
    // Its measured steps, where the profile has them, are followed piecewise in rows: R ranks
    // of one device each follow the steps measured with R ranks computing at once, which
    // hold what each keeps of one's speed (so the concurrency shares are not applied again).
    const bool ranks_at_once =
        !curve->ranks_points.empty() && s.ranks == curve->ranks && s.devices == 1;
    own.device.row_points = ranks_at_once ? curve->ranks_points : curve->points;
    own.device.row_points_flops = s.model.step_flops(1);
    own.device.row_points_params = static_cast<double>(s.model.params());
    own.device.row_weight_grad_gemms = curve->weight_grad_gemms;
    if (ranks_at_once) {
      own.device.concurrent_memory_share = own.device.concurrent_compute_share = 1;
    }
    p = simulate(own, s, algorithm);
    p.model_rate = true;
  } else {
    p = simulate(hw, s, algorithm);
  }
  p.algorithm = name_of(algorithm);
  p.devices = s.devices;
  p.strategy = s.strategy;
  const double steps =
      std::ceil(static_cast<double>(s.samples) / static_cast<double>(step_samples(s)));
  p.epoch_seconds = p.step_seconds * steps;
  p.total_seconds = p.epoch_seconds * s.epochs;
  p.bottleneck = biggest_phase(p);
  return p;
}

std::vector<Prediction> predict_all(const HardwareProfile& hw, Scenario s,
                                    const std::vector<int>& devices) {
  Scenario one = s;
  one.devices = 1;
  one.ranks = 1;
  one.deterministic = false;
  // Samples per second against one device's (the same as step times for a global batch).
  const double base = predict(hw, one).step_seconds / static_cast<double>(step_samples(one));
  std::vector<Prediction> out;
  for (int n : devices) {
    s.devices = n;
    Prediction p = predict(hw, s);
    p.speedup = base * static_cast<double>(step_samples(s)) / p.step_seconds;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tandem::detail
