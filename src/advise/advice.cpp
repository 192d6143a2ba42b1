#include "advise/advice.h"

#include <algorithm>
#include <sstream>

#include "advise/algorithms.h"
#include "advise/rank_algorithms.h"

namespace tandem::detail {
namespace {

std::string fmt(double v, int digits = 2) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << v;
  return out.str();
}

}  // namespace

std::vector<std::string> advise(const HardwareProfile& hw, const Scenario& s,
                                const std::vector<Prediction>& predictions) {
  std::vector<std::string> advice;
  if (predictions.empty()) return advice;
  const Prediction& top = *std::max_element(
      predictions.begin(), predictions.end(),
      [](const Prediction& a, const Prediction& b) { return a.devices < b.devices; });
  // Devices over all ranks: each rank runs top.devices.
  const int all_devices = top.devices * s.ranks;
  if (all_devices == 1) {
    advice.push_back("One device: " + fmt(top.step_seconds * 1e3) + " ms per step, " +
                     fmt(top.phases.at("compute") / top.step_seconds * 100, 0) + "% compute.");
    return advice;
  }
  const double compute_share = top.phases.at("compute") / top.step_seconds;
  std::string other;
  for (const auto& [phase, seconds] : top.phases) {
    if (phase != "compute" && (other.empty() || seconds > top.phases.at(other))) other = phase;
  }
  advice.push_back(std::to_string(all_devices) + " devices (" + name_of(s.strategy) +
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
  const int64_t per_device = s.per_device_batch ? s.batch : s.batch / all_devices;
  if (compute_share < 0.6) {
    // The smallest per-device batch at which the step is mostly compute.
    for (int64_t b = s.batch * 2; b <= s.batch * 64; b *= 2) {
      Scenario bigger = s;
      bigger.batch = b;
      const auto p = predict_all(hw, bigger, {top.devices});
      const int64_t b_device = s.per_device_batch ? b : b / all_devices;
      if (p.front().phases.at("compute") / p.front().step_seconds >= 0.6) {
        advice.push_back("Per-device batch " + std::to_string(per_device) + " is too small: at " +
                         std::to_string(b_device) + " per device (global " +
                         std::to_string(b_device * all_devices) + ") compute is " +
                         fmt(p.front().phases.at("compute") / p.front().step_seconds * 100, 0) +
                         "% of the step and the speedup " + fmt(p.front().speedup) +
                         "x (scale the learning rate with the batch, with warm-up).");
        break;
      }
    }
  }
  Scenario at_top = s;
  at_top.devices = top.devices;
  const Algorithm algorithm = algorithm_for(hw, at_top);
  // Gradients cross as bfloat16 only over links and between ranks (in one process the
  // reducers read the other replicas' float32 buffers directly).
  const bool compressible =
      algorithm == Algorithm::ring_allreduce || algorithm == Algorithm::hierarchical;
  const double allreduce_share =
      top.phases.count("allreduce") > 0 ? top.phases.at("allreduce") / top.step_seconds : 0.0;
  // bf16 packing costs time too: said either way once the all-reduce is worth a look.
  if (s.strategy == StrategyKind::mirrored && compressible && !s.bf16 && allreduce_share > 0.02) {
    Scenario c = s;
    c.bf16 = true;
    const auto p = predict_all(hw, c, {top.devices});
    advice.push_back(p.front().step_seconds < top.step_seconds
                         ? "bf16 gradient compression halves the bytes: " + fmt(p.front().speedup) +
                               "x (--grad-compression bf16)."
                         : "bf16 gradient compression would be slower here (" +
                               fmt(p.front().speedup) + "x): packing and unpacking cost " +
                               "more than the bytes it saves on this link.");
  }
  if (s.strategy == StrategyKind::mirrored && allreduce_share > 0.1) {
    for (int64_t mb : {1, 25}) {
      Scenario c = s;
      c.bucket_bytes = mb << 20;
      const auto p = predict_all(hw, c, {top.devices});
      if (p.front().step_seconds < top.step_seconds * 0.97) {
        advice.push_back(std::to_string(mb) + " MB buckets: " + fmt(p.front().speedup) + "x.");
      }
    }
    if (compressible) {
      const LinkProfile& link = algorithm == Algorithm::hierarchical && hw.rank_rank.bandwidth > 0
                                    ? hw.rank_rank
                                    : hw.device_device;
      advice.push_back("The all-reduce moves " +
                       fmt(2.0 * (all_devices - 1) / all_devices * 4.0 *
                               static_cast<double>(s.model.params()) / 1e6,
                           1) +
                       " MB per device per step at " + fmt(link.bandwidth / 1e9, 1) +
                       " GB/s; a faster link shortens it in proportion.");
    }
  }
  // What each line rests on: tandem's held-out validation measures CPU devices in one
  // process (batches, strategies and reducers: docs/SCALING.md); nothing else is measured.
  // bf16 against float32 was measured between 2 CPU ranks: costed from calibrate's sweep,
  // no separated pair contradicts it; costed from halved bytes, pairs did
  // (tests/advise/validation_run_test.cpp, TheAdvisedChoicesOnTheCommittedRuns); bucket
  // sizes against the default on 2 CPU devices and 2 ranks (docs/results/repeated/): on
  // ranks the direction held where the runs separated, the size of the gain did not.
  const bool measured_kind = hw.device.threads > 0 && s.ranks == 1;
  for (size_t i = 1; i < advice.size(); ++i) {
    const bool batch_or_strategy =
        advice[i].rfind("Per-device batch", 0) == 0 || advice[i].rfind("Keep a replica", 0) == 0;
    if (measured_kind && batch_or_strategy) {
      advice[i] += " [validated: held-out runs on CPU devices, docs/SCALING.md]";
    } else if (advice[i].rfind("bf16 gradient compression would be slower", 0) == 0 &&
               hw.device.threads > 0 && sweep_applies(hw.rank_rank, s.ranks)) {
      advice[i] +=
          " [checked on 2 CPU ranks, 3 held-out runs: in the 3 of 48 pairs whose steps "
          "separated beyond one configuration built twice, bf16 was slower, as predicted; the "
          "rest were within the runs' spread, docs/SCALING.md]";
    } else if (advice[i].rfind("bf16 gradient compression", 0) == 0 && hw.device.threads > 0 &&
               sweep_applies(hw.rank_rank, s.ranks)) {
      advice[i] +=
          " [not validated: in 3 held-out runs on 2 CPU ranks bf16 never measured faster than "
          "float32 beyond the runs' spread, docs/SCALING.md]";
    } else if (advice[i].rfind("bf16 gradient compression", 0) == 0 && hw.device.threads > 0 &&
               s.ranks > 1) {
      advice[i] +=
          " [not validated: no all-reduce sweep from tandem calibrate on this many ranks, so "
          "bf16 is costed from halved bytes and its loops, which on 2 CPU ranks predicted bf16 "
          "faster where it measured slower, docs/SCALING.md]";
    } else if (advice[i].find(" MB buckets: ") != std::string::npos && hw.device.threads > 0) {
      advice[i] +=
          " [not validated: on 2 CPU ranks, 25 MB buckets were predicted 2-21% faster for a "
          "deep model and measured 0.82-1.07x the default's step in 3 held-out runs, beyond "
          "one configuration built twice in 2 of 12 cells (faster); on 2 CPU devices no pair "
          "separated, docs/SCALING.md]";
    } else {
      advice[i] += " [not validated by a measured run]";
    }
  }
  return advice;
}

}  // namespace tandem::detail
