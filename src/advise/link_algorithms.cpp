#include "advise/link_algorithms.h"

#include <algorithm>
#include <cmath>

#include "advise/step_costs.h"

namespace tandem::detail {
namespace {

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

}  // namespace

// Replicas on devices that move bytes over links (GPUs; NCCL, DDP, MirroredStrategy): buckets
// all-reduced in a ring (or a tree) while backward runs, then the update on every device.
Prediction ring_allreduce(const HardwareProfile& hw, const Scenario& s) {
  const DeviceProfile& d = hw.device;
  const int n = s.devices;
  const int64_t rows = rows_per_device(s);
  const auto& layers = s.model.layers;
  Prediction p;
  Resource device, ring;
  double t = device.run(0, transfer_seconds(hw.host_device, 4.0 * rows * s.model.input_size));
  p.phases["input"] = t;
  const double forward = forward_seconds(d, s.model, rows);
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
  p.phases["optimizer"] = update_seconds(hw, s, static_cast<double>(s.model.params()));
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
Prediction keras_multi_gpu_model(const HardwareProfile& hw, const Scenario& s) {
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

}  // namespace tandem::detail
