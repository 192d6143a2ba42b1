#include "cli/validate_measure.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

#include "advise/calibrate_dense.h"
#include "advise/probes.h"
#include "advise/step_run.h"
#include "advise/weight_grad_probes.h"
#include "advise/window_check.h"
#include "parallel/strategy.h"

namespace tandem::cli {

ValidationMeasurements measure_validation(const ValidationPlan& plan, const ValidateOptions& o,
                                          detail::HardwareProfile& hw, detail::World* world) {
  const auto& models = plan.models;
  const auto& batches = plan.batches;
  const auto& kinds = plan.kinds;
  const auto& calibration_rows = plan.calibration_rows;
  const int n = plan.n, ranks = plan.ranks;
  const bool reporter = plan.reporter;
  detail::StrategyOptions one_device;
  one_device.threads_per_device = hw.device.threads;
  ValidationMeasurements out;
  auto& all = out.all;
  auto& calibrations = out.calibrations;
  // How much of one device's speed each keeps when all compute or stream memory at once:
  // measured again through the run (a virtual machine's second core ran at 46-98% of the
  // first's from minute to minute), one probe round per repetition round.
  const bool refresh = !calibration_rows.empty();
  auto &memory_shares = out.memory_shares, &compute_shares = out.compute_shares;
  // The devices' cores, for each repetition's window (the runs' devices sit on the same ones).
  std::unique_ptr<detail::DeviceGroup> edges;
  if (reporter && ranks == 1 && n > 1) {
    edges = std::make_unique<detail::DeviceGroup>(detail::plan_devices(n, hw.device.threads));
  }
  const int cpus = detail::online_cpus();
  for (size_t model = 0; model < models.size(); ++model) {
    const auto& widths = models[model];
    std::vector<std::unique_ptr<detail::StepRun>> calibration, together;
    for (int64_t r : calibration_rows) {
      if (reporter) {
        calibration.push_back(
            std::make_unique<detail::StepRun>(detail::dense_stack(widths), r, one_device));
      }
      // Under mpirun every rank also runs the same 1-device steps at once, no exchange between
      // them: what one rank computes at while the others compute (rank 0's times; the ranks of
      // one host share its memory and caches, which a rank alone does not show).
      if (ranks > 1) {
        together.push_back(
            std::make_unique<detail::StepRun>(detail::dense_stack(widths), r, one_device));
      }
    }
    uint64_t seed = 100;
    detail::ProbeWindow model_window;  // this model's repetitions, every batch
    for (int64_t batch : batches) {
      // Every rank makes the multi-rank runs, in the same order (their steps are collective);
      // rank 0 alone the 1-device ones.
      std::vector<std::unique_ptr<detail::StepRun>> runs;
      std::vector<std::vector<detail::Window>> windows(kinds.size());
      std::vector<int> redone(kinds.size(), 0);
      for (const ValidationKind& k : kinds) {
        if (k.ranks == 1 && !reporter) {
          runs.push_back(nullptr);
          continue;
        }
        detail::StrategyOptions so;
        so.devices = k.devices;
        so.threads_per_device = hw.device.threads;
        so.kind = k.strategy;
        so.reducer = k.reducer;
        so.deterministic = k.deterministic;
        if (k.bucket_mb > 0) so.bucket_bytes = static_cast<int64_t>(k.bucket_mb * (1 << 20));
        if (k.ranks > 1) {
          so.world = world;
          so.gradient_comm = {.bf16 = k.bf16, .deterministic = k.deterministic};
        }
        runs.push_back(std::make_unique<detail::StepRun>(detail::dense_stack(widths), batch, so));
      }
      for (int rep = 0; rep < o.repeats; ++rep) {
        if (refresh && ranks == 1) {
          memory_shares.push_back(detail::concurrent_memory_share(n, 64 << 20, 1));
          compute_shares.push_back(detail::concurrent_compute_share(n, 1));
        }
        for (auto& r : calibration) {
          r->settle(seed);
          r->time(o.steps, seed);
        }
        for (auto& r : together) {
          world->barrier();  // every rank starts its steps together
          r->settle(seed);
          r->time(o.steps, seed);
        }
        // Each round starts one configuration later, so that none always follows the same
        // one; every rank rotates alike. (The same configuration built twice still measures
        // apart with this: docs/SCALING.md, "one configuration built twice".)
        std::vector<size_t> order;
        for (size_t j = 0; j < runs.size(); ++j) {
          const size_t at = (j + static_cast<size_t>(rep)) % runs.size();
          if (runs[at]) order.push_back(at);
        }
        if (!edges) {
          for (size_t at : order) {
            runs[at]->settle(seed);
            runs[at]->time(o.steps, seed);
          }
          continue;
        }
        // A repetition timed again replaces the one its disturbed window held.
        const detail::GroupEdges group_edges{*edges};
        const auto kept = detail::repetitions_in_quiet_windows(
            static_cast<int>(order.size()),
            [&](int u) {
              auto& r = runs[order[static_cast<size_t>(u)]];
              r->settle(seed);
              r->time(o.steps, seed);
            },
            [&](int u) { runs[order[static_cast<size_t>(u)]]->forget_last(); }, group_edges,
            &detail::GroupEdges::pause, cpus, group_edges.fastest(), model_window);
        for (size_t u = 0; u < order.size(); ++u) {
          windows[order[u]].push_back(kept[u].window);
          redone[order[u]] += kept[u].redone;
        }
      }
      for (size_t i = 0; reporter && i < runs.size(); ++i) {
        MeasuredConfig m{model,
                         batch,
                         i,
                         runs[i]->median_seconds(),
                         runs[i]->seconds(),
                         runs[i]->phase_seconds(),
                         {},
                         {},
                         {},
                         redone[i]};
        for (const detail::Window& w : windows[i]) {
          m.handoff_per_repetition.push_back(w.handoff);
          m.steal_per_repetition.push_back(w.counted_steal());
          m.cache_per_repetition.push_back(w.cache);
        }
        all.push_back(m);
      }
    }
    if (edges && reporter) out.measured_windows.push_back(model_window);
    if (!calibration.empty()) {
      // The model's weight-gradient GEMMs, whole and as one of the n devices' shards (what
      // weight-gradient sharding keeps of the pass), where the run has CPU devices.
      std::vector<detail::WeightGradShards> gemms;
      if (ranks == 1 && n > 1) {
        gemms = detail::weight_grad_gemm_seconds(widths, calibration_rows, {n}, hw.device.threads,
                                                 o.repeats);
      }
      nlohmann::json c = detail::refit_dense_rate(hw, widths, calibration, together, ranks, gemms);
      fmt::print("{}: {:.1f} GFLOP/s sustained, half_rows {:.1f} (1 device at rows {})\n",
                 fmt::join(widths, "-"), c.at("sustained_flops").get<double>() / 1e9,
                 c.at("half_rows").get<double>(), fmt::join(calibration_rows, ", "));
      for (const auto& timed : gemms) fmt::print("  {}\n", detail::weight_grad_shares(timed));
      if (!together.empty()) {
        std::vector<std::string> slower;
        for (size_t i = 0; i < together.size(); ++i) {
          slower.push_back(fmt::format(
              "{:.2f}x", together[i]->median_seconds() / calibration[i]->median_seconds()));
        }
        fmt::print("  with {} ranks computing at once: {} the step alone\n", ranks,
                   fmt::join(slower, ", "));
      }
      calibrations.push_back(c);
    }
  }
  if (!reporter) return out;
  if (edges) {
    // Where the kept repetitions ran, against the fastest readings of the whole run.
    out.best_handoff = detail::best_handoff_seconds(n);
    out.best_cache = detail::best_cache_seconds(n);
    int apart = 0, taken = 0, crowded = 0, repetitions = 0, redone = 0, waits = 0;
    for (const MeasuredConfig& m : all) {
      redone += m.redone;
      for (size_t k = 0; k < m.handoff_per_repetition.size(); ++k) {
        ++repetitions;
        apart += m.handoff_per_repetition[k] > detail::apart_handoff() * out.best_handoff;
        taken += m.steal_per_repetition[k] > detail::kQuietSteal;
        crowded += detail::cache_crowded(m.cache_per_repetition[k], out.best_cache);
      }
    }
    for (const detail::ProbeWindow& w : out.measured_windows) waits += w.waits;
    fmt::print(
        "where the repetitions ran: {} of {} kept with the devices' cores apart (a hand-off over "
        "{}x the fastest, {:.0f} ns), {} with over {:.0f}% of the CPUs' time taken by the "
        "hypervisor, {} with their caches crowded (recorded only; a cache reading over {}x the "
        "fastest, {:.1f} us); {} timed again, after {:.2f} s waiting for quiet windows\n",
        apart, repetitions, detail::apart_handoff(), out.best_handoff * 1e9, taken,
        detail::kQuietSteal * 100, crowded, detail::kCrowdedCache, out.best_cache * 1e6, redone,
        waits * detail::kQuietPollSeconds);
  }
  if (refresh && ranks == 1) {
    hw.device.concurrent_memory_share = std::min(1.0, detail::median_of(memory_shares));
    hw.device.concurrent_compute_share = std::min(1.0, detail::median_of(compute_shares));
    hw.document["device"]["concurrent_memory_share"] = hw.device.concurrent_memory_share;
    hw.document["device"]["concurrent_compute_share"] = hw.device.concurrent_compute_share;
    fmt::print(
        "{} devices at once keep {:.2f} of one's memory bandwidth and {:.2f} of its GEMM speed "
        "(medians of {} probe rounds; ranges {:.2f}-{:.2f} and {:.2f}-{:.2f})\n",
        n, hw.device.concurrent_memory_share, hw.device.concurrent_compute_share,
        memory_shares.size(), *std::min_element(memory_shares.begin(), memory_shares.end()),
        *std::max_element(memory_shares.begin(), memory_shares.end()),
        *std::min_element(compute_shares.begin(), compute_shares.end()),
        *std::max_element(compute_shares.begin(), compute_shares.end()));
  }
  return out;
}

}  // namespace tandem::cli
