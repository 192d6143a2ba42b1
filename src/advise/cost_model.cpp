#include "advise/cost_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Seconds of one layer's forward (or backward) on `rows` samples on one device.
double layer_seconds(const DeviceProfile& d, const LayerCost& l, int64_t rows, bool backward) {
  if (rows <= 0) return 0;
  const double r = static_cast<double>(rows);
  const double flops = r * (backward ? l.backward_flops : l.forward_flops);
  const double bytes = r * (backward ? l.backward_bytes : l.forward_bytes);
  if (flops <= 0 && bytes <= 0) return 0;
  double seconds = d.layer_overhead + bytes / d.memory_bandwidth;
  if (flops > 0) {
    const double rate = l.kind == CostKind::conv
                            ? (d.conv_flops > 0 ? d.conv_flops : d.sustained_flops)
                            : d.sustained_flops * r / (r + d.half_rows);
    seconds += flops / rate;
  }
  return seconds;
}

double transfer_seconds(const LinkProfile& link, double bytes) {
  return bytes <= 0 ? 0 : link.latency + bytes / link.bandwidth;
}

// A resource that does one task at a time: a task starts when ready and the resource is
// free; returns its end.
struct Resource {
  double free_at = 0, busy = 0;
  double run(double ready, double seconds) {
    const double start = std::max(ready, free_at);
    free_at = start + seconds;
    busy += seconds;
    return free_at;
  }
};

// The rows the busiest device computes.
int64_t rows_per_device(const Scenario& s) {
  return s.per_device_batch ? s.batch : (s.batch + s.devices - 1) / s.devices;
}

// Samples one step trains.
int64_t step_samples(const Scenario& s) {
  return s.per_device_batch ? s.batch * s.devices : s.batch;
}

void check(const HardwareProfile& hw, const Scenario& s) {
  if (s.model.layers.empty()) throw ConfigError("advise: the model has no layers");
  if (s.devices < 1) throw ConfigError("advise: devices must be >= 1");
  if (s.batch < 1) throw ConfigError("advise: batch size must be >= 1");
  if (!s.per_device_batch && s.batch < s.devices) {
    throw ConfigError("advise: batch size " + std::to_string(s.batch) + " is smaller than " +
                      std::to_string(s.devices) + " devices: some would have no samples");
  }
  if (s.bucket_bytes <= 0) throw ConfigError("advise: bucket size must be > 0");
  if (s.samples <= 0 || s.epochs <= 0) throw ConfigError("advise: samples and epochs must be > 0");
}

// One device, or N replicas with buckets all-reduced in a ring during backward.
Prediction mirrored(const HardwareProfile& hw, const Scenario& s) {
  const DeviceProfile& d = hw.device;
  const int n = s.devices;
  const int64_t rows = rows_per_device(s);
  const auto& layers = s.model.layers;
  Prediction p;
  Resource device, ring;
  double t = device.run(0, transfer_seconds(hw.host_device, 4.0 * rows * s.model.input_size));
  p.phases["input"] = t;
  double forward = 0;
  for (const auto& l : layers) forward += layer_seconds(d, l, rows, false);
  t = device.run(t, forward);
  double compute = forward, comm_total = 0;
  const double wire = s.bf16 ? 2.0 : 4.0;
  double bucket_bytes = 0, deferred = 0;
  double comm_end = t;
  for (size_t i = layers.size(); i-- > 0;) {
    const double b = layer_seconds(d, layers[i], rows, true);
    compute += b;
    t = device.run(t, b);
    bucket_bytes += 4.0 * static_cast<double>(layers[i].params);
    const bool last = i == 0;
    if (n > 1 && (bucket_bytes >= static_cast<double>(s.bucket_bytes) || last)) {
      const double bytes_on_wire = bucket_bytes * wire / 4.0;
      // Ring: 2(n-1) steps, each moving 1/n of the bucket over every link. Tree: the whole
      // bucket down a binary tree and back up, 2 ceil(log2 n) hops.
      const double hops = 2.0 * std::ceil(std::log2(static_cast<double>(n)));
      const double c =
          s.allreduce == AllreduceKind::tree
              ? hops * (hw.device_device.latency + bytes_on_wire / hw.device_device.bandwidth)
              : 2.0 * (n - 1) * hw.device_device.latency +
                    2.0 * (n - 1) / n * bytes_on_wire / hw.device_device.bandwidth;
      comm_total += c;
      if (d.comm_uses_compute) {
        t = device.run(t, c);  // the cores that compute also move the bytes
        comm_end = t;
      } else {
        // Without overlap a bucket waits for the whole backward (known only at the end:
        // queued here, started below).
        comm_end = s.overlap ? ring.run(t, c) : (deferred += c, comm_end);
      }
      bucket_bytes = 0;
    }
  }
  if (deferred > 0) comm_end = ring.run(t, deferred);
  const double end_of_reduction = std::max(t, comm_end);
  p.phases["compute"] = compute;
  p.phases["allreduce"] = std::max(0.0, end_of_reduction - (p.phases["input"] + compute));
  p.phases["optimizer"] =
      s.update_passes * 4.0 * static_cast<double>(s.model.params()) / d.memory_bandwidth;
  p.phases["overhead"] = d.step_overhead;
  p.busy["device"] = device.busy;
  p.busy["allreduce"] = comm_total;
  p.step_seconds = end_of_reduction + p.phases["optimizer"] + d.step_overhead;
  return p;
}

// keras multi_gpu_model as TensorFlow ran it: weights on the host are copied to every
// device layer by layer as forward needs them, gradients are copied back layer by layer
// as backward makes them, and the host sums the N gradients and updates each layer as
// soon as its gradients are in. Devices sharing a link share its bandwidth.
Prediction host(const HardwareProfile& hw, const Scenario& s) {
  const DeviceProfile& d = hw.device;
  const int n = s.devices;
  const int64_t rows = rows_per_device(s);
  const int share = std::min(n, hw.host_device.devices_per_link);  // devices on the busiest link
  const auto& layers = s.model.layers;
  Prediction p;
  Resource links_to_device, device, links_to_host, cpu;
  // CPU devices copy with their own cores: their copies queue behind their compute.
  Resource& to_device = d.comm_uses_compute ? device : links_to_device;
  Resource& to_host = d.comm_uses_compute ? device : links_to_host;
  // Each link direction carries its devices' copies one after another; busy time per
  // direction is kept apart (for CPU devices the resource is the device itself).
  double in_busy = 0, out_busy = 0;
  auto over_link = [&](double bytes_per_device, double& busy) {
    const double seconds = share * transfer_seconds(hw.host_device, bytes_per_device);
    busy += seconds;
    return seconds;
  };
  double ready = to_device.run(0, over_link(4.0 * rows * s.model.input_size, in_busy));
  std::vector<double> weights_at(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    weights_at[i] =
        to_device.run(0, over_link(4.0 * static_cast<double>(layers[i].params), in_busy));
  }
  double t = ready, compute = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const double f = layer_seconds(d, layers[i], rows, false);
    compute += f;
    t = device.run(std::max(t, weights_at[i]), f);
  }
  // Outputs to the host, loss there, output gradients back: small, latency-bound.
  t += 2 * hw.host_device.latency;
  double update_end = 0;
  for (size_t i = layers.size(); i-- > 0;) {
    const double b = layer_seconds(d, layers[i], rows, true);
    compute += b;
    t = device.run(t, b);
    const double bytes = 4.0 * static_cast<double>(layers[i].params);
    const double arrived = to_host.run(t, over_link(bytes, out_busy));
    // The sum of the n gradients (n reads, 1 write), then the update's passes.
    update_end = cpu.run(arrived, (n + 1) * bytes / hw.host_memory_bandwidth +
                                      s.update_passes * bytes / hw.host_update_bandwidth);
  }
  p.phases["compute"] = compute;
  p.phases["overhead"] = d.step_overhead;
  p.busy["device"] = device.busy;
  p.busy["weights_to_devices"] = in_busy;
  p.busy["gradients_to_host"] = out_busy;
  p.busy["host_update"] = cpu.busy;
  // The critical path is compute plus waiting; the waiting is attributed to the copies
  // and the host's sum and update in proportion to how busy each was.
  const double path = update_end;
  const double waiting = std::max(0.0, path - compute);
  const double others = in_busy + out_busy + cpu.busy;
  p.phases["weights_to_devices"] = waiting * in_busy / others;
  p.phases["gradients_to_host"] = waiting * out_busy / others;
  p.phases["host_update"] = waiting * cpu.busy / others;
  p.step_seconds = path + d.step_overhead;
  return p;
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

std::string fmt(double v, int digits = 2) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << v;
  return out.str();
}

}  // namespace

ModelCost ModelCost::dense(const std::vector<int64_t>& widths) {
  if (widths.size() < 2) throw ConfigError("advise: a model needs an input and an output width");
  ModelCost m;
  m.input_size = widths.front();
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
  const Prediction p = mirrored(unit, s);
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

void calibrate_conv_to_step(HardwareProfile& hw, const ModelCost& model, int64_t batch,
                            double step_seconds, const std::string& where) {
  if (!model.has_conv()) throw ConfigError(where + ": the calibration model has no Conv2D");
  if (batch <= 0 || !(step_seconds > 0)) {
    throw ConfigError(where + ": calibration batch and step seconds must be > 0");
  }
  Scenario s;
  s.model = model;
  s.batch = batch;
  // The step is fixed costs plus convolution time, which scales as 1 / conv_flops: predict
  // at a reference rate, then solve.
  constexpr double kReference = 1e12;
  HardwareProfile unit = hw;
  unit.device.conv_flops = kReference;
  double conv_flops = 0;
  for (const auto& l : model.layers) {
    if (l.kind == CostKind::conv) {
      conv_flops += (l.forward_flops + l.backward_flops) * static_cast<double>(batch);
    }
  }
  const double conv_seconds = conv_flops / kReference;
  const double fixed = mirrored(unit, s).step_seconds - conv_seconds;
  if (!(step_seconds > fixed)) {
    throw ConfigError(where + ": calibration step of " + std::to_string(step_seconds) +
                      " s is below the model's other costs on this profile (" +
                      std::to_string(fixed) + " s)");
  }
  hw.device.conv_flops = kReference * conv_seconds / (step_seconds - fixed);
}

Prediction predict(const HardwareProfile& hw, const Scenario& s) {
  check(hw, s);
  // One device has nothing to copy or reduce: multi_gpu_model is not used then.
  Prediction p = s.strategy == StrategyKind::host && s.devices > 1 ? host(hw, s) : mirrored(hw, s);
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

std::vector<std::string> advise(const HardwareProfile& hw, const Scenario& s,
                                const std::vector<Prediction>& predictions) {
  std::vector<std::string> advice;
  if (predictions.empty()) return advice;
  const Prediction& top = *std::max_element(
      predictions.begin(), predictions.end(),
      [](const Prediction& a, const Prediction& b) { return a.devices < b.devices; });
  if (top.devices == 1) {
    advice.push_back("One device: " + fmt(top.step_seconds * 1e3) + " ms per step, " +
                     fmt(top.phases.at("compute") / top.step_seconds * 100, 0) + "% compute.");
    return advice;
  }
  const double compute_share = top.phases.at("compute") / top.step_seconds;
  std::string other;
  for (const auto& [phase, seconds] : top.phases) {
    if (phase != "compute" && (other.empty() || seconds > top.phases.at(other))) other = phase;
  }
  advice.push_back(std::to_string(top.devices) + " devices (" + name_of(s.strategy) +
                   "): " + fmt(top.speedup) + "x one device; the step is " +
                   fmt(compute_share * 100, 0) + "% compute, the largest other part is " + other +
                   " (" + fmt(top.phases.at(other) * 1e3) + " ms).");
  if (s.strategy == StrategyKind::host) {
    Scenario m = s;
    m.strategy = StrategyKind::mirrored;
    const auto alt = predict_all(hw, m, {top.devices});
    advice.push_back("Keep a replica on every device and all-reduce gradients (mirrored): " +
                     fmt(alt.front().speedup) + "x instead of " + fmt(top.speedup) +
                     "x; the weights then never cross the host link.");
  }
  const int64_t per_device = s.per_device_batch ? s.batch : s.batch / top.devices;
  if (compute_share < 0.6) {
    // The smallest per-device batch at which the step is mostly compute.
    for (int64_t b = s.batch * 2; b <= s.batch * 64; b *= 2) {
      Scenario bigger = s;
      bigger.batch = b;
      const auto p = predict_all(hw, bigger, {top.devices});
      const int64_t b_device = s.per_device_batch ? b : b / top.devices;
      if (p.front().phases.at("compute") / p.front().step_seconds >= 0.6) {
        advice.push_back("Per-device batch " + std::to_string(per_device) + " is too small: at " +
                         std::to_string(b_device) + " per device (global " +
                         std::to_string(b_device * top.devices) + ") compute is " +
                         fmt(p.front().phases.at("compute") / p.front().step_seconds * 100, 0) +
                         "% of the step and the speedup " + fmt(p.front().speedup) +
                         "x (scale the learning rate with the batch, with warm-up).");
        break;
      }
    }
  }
  if (s.strategy == StrategyKind::mirrored && top.phases.at("allreduce") > 0.1 * top.step_seconds) {
    if (!s.bf16) {
      Scenario c = s;
      c.bf16 = true;
      const auto p = predict_all(hw, c, {top.devices});
      advice.push_back("bf16 gradient compression halves the bytes: " + fmt(p.front().speedup) +
                       "x (--grad-compression bf16).");
    }
    for (int64_t mb : {1, 25}) {
      Scenario c = s;
      c.bucket_bytes = mb << 20;
      const auto p = predict_all(hw, c, {top.devices});
      if (p.front().step_seconds < top.step_seconds * 0.97) {
        advice.push_back(std::to_string(mb) + " MB buckets: " + fmt(p.front().speedup) + "x.");
      }
    }
    advice.push_back("The all-reduce moves " +
                     fmt(2.0 * (top.devices - 1) / top.devices * 4.0 *
                             static_cast<double>(s.model.params()) / 1e6,
                         1) +
                     " MB per device per step at " + fmt(hw.device_device.bandwidth / 1e9, 1) +
                     " GB/s; a faster device-to-device link shortens it in proportion.");
  }
  return advice;
}

}  // namespace tandem::detail
