// The scaling report: one self-contained HTML file (inline SVG charts, no scripts, nothing
// fetched) and the same figures as a terminal table: speedup against devices (measured,
// predicted by the cost model, ideal), the time of a step by phase for every
// configuration, and training curves (loss and accuracy per epoch).
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace tandem::detail {

struct ReportConfig {
  std::string name;      // "2 devices mirrored"
  std::string strategy;  // mirrored | host
  int devices = 1;
  double ms_per_step = 0;
  double speedup = 1;              // measured, vs 1 device
  double predicted_speedup = NAN;  // NaN: no prediction
  double predicted_ms = NAN;
  std::map<std::string, double> phase_ms;  // per device: forward, backward, allreduce, ...
};

struct TrainingCurve {
  std::string name;                                   // the file it came from
  std::map<std::string, std::vector<double>> series;  // "loss", "accuracy", "val_loss"...
};

struct ScalingReport {
  std::string title = "tandem scaling report";
  std::string model, hardware;
  int64_t batch = 0;
  std::vector<ReportConfig> configs;  // the first is the 1-device baseline
  std::vector<TrainingCurve> curves;
  std::vector<std::string> notes;  // plain-words findings
};

std::string report_html(const ScalingReport& report);
std::string report_text(const ScalingReport& report);
// Per-epoch metrics from `tandem train --metrics-json` output or a CSVLogger file;
// FormatError naming the file when it is neither.
TrainingCurve read_training_curve(const std::string& path);

}  // namespace tandem::detail
