// `tandem calibrate --out PROFILE.json`: a hardware profile of this machine's CPU devices
// measured from single-device, single-process facts only, each figure with its source:
//   - the dense layers' GEMM rate and how it falls with few rows (sustained_flops,
//     half_rows), from 1-device training steps of the model (--layers) at several row counts,
//     the update's time taken out;
//   - the update's memory bandwidth, from those steps' optimizer phase;
//   - the convolution rate (--conv-model), from 1-device steps of a built-in convnet;
//   - one core's copy and sum bandwidths (the host strategy's copies and gradient sum, the
//     in-process reduction) and the latency of a hand-off between two threads.
// Nothing is fitted to a multi-device run: a device is what `tandem train --devices 1
// --threads-per-device N` runs, and the profile says N, so that every prediction made from
// it can be checked by running it.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "advise/hardware_profile.h"
#include "cli/options.h"

namespace tandem::cli {

struct CalibrateOptions {
  ModelShapeOptions shape;  // the dense model whose layers' GEMMs are measured
  std::string conv_model;   // a built-in convnet for the convolution rate; empty: none
  int64_t conv_batch = 64;
  int threads_per_device = 1;
  int max_devices = 0;                    // 0: the cores / threads_per_device
  std::string rows = "16,32,64,128,256";  // rows per device of the measured steps
  int steps = 3, repeats = 5;
  // More dense models whose own rate curves the profile keeps (';' between models).
  std::string also_layers;
  std::string name = "this-machine";
  std::string out;
  // Write the profile even where a probe of devices at once ran with the cores apart or taken
  // (window_check.h); by default calibrate then fails and writes nothing.
  bool allow_disturbed = false;
  // A hand-off between the devices' cores over this many times the fastest counts as apart.
  double apart_handoff = detail::kApartHandoff;
  // Seconds a probe waits at most, over all its rounds, for quiet windows to time a round again.
  double quiet_wait = detail::kQuietWaitSeconds;
};

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& options);
int run_calibrate(const CalibrateOptions& options);

}  // namespace tandem::cli
