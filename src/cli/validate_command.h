// `tandem bench validate --hardware PROFILE`: the cost model checked on runs it was not
// calibrated on. The profile (from `tandem calibrate`, measured on one device) is used as it
// is; each model and global batch is measured on 1 device and on N under every strategy
// and reducer (and deterministic mode), interleaved, median of repetitions; predicted and
// measured step time and speedup are printed side by side, and the command exits non-zero
// (1) when any speedup is off by more than --speedup-tolerance or any step time by more
// than --step-tolerance.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"

namespace tandem::cli {

struct ValidateOptions {
  std::string hardware;  // a CPU profile: device.threads says what a device is
  // Hidden widths of each dense model, ';'-separated: the seed, wide, narrow, deep, shallow.
  std::string models = "4096,2048,512,64;8192;256,256;1024,1024,1024,1024,1024,1024";
  std::string batches = "32,128,512,2048";
  int devices = 2;
  int steps = 3, repeats = 5;
  // 1-device rows each model's rate curve is measured again at (none: the profile's).
  // Between and around the rows the configurations run (batches / 8 to batches), none of them.
  std::string calibration_rows = "6,12,24,48,96,192,384,768,1536";
  double speedup_tolerance = 0.15, step_tolerance = 0.20;
  // Bucket sizes (MB) measured besides the default, where gradients are reduced in buckets:
  // the all-reduce reducer on N devices, or R ranks (none: the default only).
  std::string bucket_mb = "none";
  std::string json_path;
  // Seconds a refit's probe of devices at once, and each model's repetitions (one budget for
  // all its batches), wait at most for quiet windows.
  double quiet_wait = detail::kQuietWaitSeconds;
  // How many times the fastest hand-off counts as apart, in the refits' probes and the
  // repetitions' windows.
  double apart_handoff = detail::kApartHandoff;
  // Committed runs (--json of earlier validations): their measurements against this build's
  // predictions, each from its own profile or --hardware; nothing is measured. Several runs
  // of the same configurations: a configuration misses when it misses in more than half.
  std::vector<std::string> recompute;
};

// `bench` is the `tandem bench` command.
CLI::App* add_validate_command(CLI::App& bench, ValidateOptions& options);
int run_validate(const ValidateOptions& options);

}  // namespace tandem::cli
