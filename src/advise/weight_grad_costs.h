// What a device's Dense layers' weight gradients cost, and what computing only a shard of each
// of them keeps, from calibrate's timings of the model's GEMMs and steps (weight_grad_gemms):
// the parts of weight-gradient sharding's step (cpu_algorithms.cpp, weight_grad_shard).
#pragma once

#include <cstdint>
#include <optional>

#include "advise/step_costs.h"

namespace tandem::detail {

// The part of a device's Dense layers' weight-gradient time that does not grow with the rows:
// the cost model's rate sustained * r / (r + half_rows) is flops / sustained plus
// flops_per_row * half_rows / sustained, a fixed cost per pass proportional to the layer's
// weights (streaming them). The weight-gradient pass is as many FLOPs as forward.
double weight_grad_fixed_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows,
                                 Shares share);

// The weight-gradient part of a device's Dense layers' backward: each one's backward seconds
// (its GEMMs, and its small per-layer overhead) times the weight gradient's share of its FLOPs
// (as many as its forward's).
double weight_grad_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows, Shares share);

// What a device of n keeps of that part when it computes only its shard of every weight
// gradient: the model's shards' GEMMs over its whole kernels' GEMMs as calibrate timed them
// at rows near `rows` (in log rows between two measured row counts, the nearest end's beyond
// them), with the caches emptied first where the model's gradients do not fit in the core's
// cache (a step streams them out), warm where they do; -1 where the profile did not time
// them for n devices (calibrate times them for 2, 4, 8, ... devices and its max_devices, bench
// validate for its --devices; other device counts keep the rule of 1/N of the fixed part). In the
// runs held out from this (docs/SCALING.md, "Weight-gradient shards timed as they run") the large
// models' shards took 0.47-0.62 of the whole GEMMs at 12 and 24 rows with the caches emptied,
// 0.86-1.16 at 48 and 96 (oneDNN's kernels for few rows are bound by writing the gradient, and 1/N
// of it stays in the cache for the accumulating GEMMs); the 784-256-256-10 model's, warm, 1.11-1.34
// at 12 and 24.
double weight_grad_shard_kept(const DeviceProfile& d, const ModelCost& m, int64_t rows, int n);

// The share of a device's backward that computing only its shard of every weight gradient
// saves, where calibrate timed the model's backward GEMMs as a step runs them (the `*_step`
// timings: after the update and forward's read of every parameter, input gradients
// interleaved): the whole weight-gradient GEMMs less the shards, over the input- and whole
// weight-gradient GEMMs, at rows near `rows` (in log rows, as weight_grad_shard_kept); nullopt
// where they were not. The two parts the rule before guessed, as timed inside steps at 16 rows
// (docs/SCALING.md, "Weight gradients timed as a step runs them"): the deep 784-1024x6-10
// model's weight gradients were 0.67-0.69 of its backward GEMMs, not the 0.54 their FLOPs give
// (oneDNN's kernels for few rows are bound by writing the gradient); and its shards kept
// 0.40-0.42 of them, the warm share, where the seed's kept 0.58-0.61, the share with the caches
// emptied (what the update between two steps leaves in the shared cache decides which).
std::optional<double> weight_grad_shard_saved(const DeviceProfile& d, int64_t rows, int n);

// A device's forward and backward under weight-gradient sharding, all n devices at once, in
// seconds, where calibrate timed the model's steps so (the `*_shared` timings, steps_at_once.h:
// the devices' forward reads the shared parameters the others updated their shards of, and each
// one's shard GEMMs read the others' operands from their cores' caches), at rows near `rows`;
// nullopt where it did not.
// - Between two timed row counts, linear in log rows. That over-states seconds that grow as a
//   power of the rows, by up to 6% at rows 4/3 of a timed count (16 rows per device, the
//   validation's batch 32, the one it takes these seconds at). Interpolating as a power of the
//   rows passed the criteria written for it on held_out_shared_landed_xeon, when these seconds
//   were taken at every row count, but newly missed two configurations of
//   held_out_caller_spin_xeon, so it is not taken (held_out_shared_landed_xeon/
//   power_rows_rule.patch).
// - Beyond them, the nearest end's seconds times one device's forward and backward of model `m`
//   at `rows` over the same at the end's rows.
// - The timings are the profile's own rows (calibrate's: the points'), the rounds' medians where
//   the profile records them, else their best. At few rows the best sits further under the
//   median (held_out_median_xeon); with these seconds the medians gave the smaller median |step
//   error| of the sharded steps at 16 rows per device in 6 of the 7 sets after that one.
// Profiles time them only for chains of Dense layers (dense_rates). The probe leaves out the
// loss, the relu's derivative and the input rows' copy (steps_at_once.h), which one device's
// curve holds. weight_grad_shard takes these seconds below kRatioFromRows rows per device only.
std::optional<double> shared_steps_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows,
                                           int n);

// The same timing's shared pass over its alone pass (one device's steps by themselves), the
// medians where recorded, linear in log rows between two timed row counts and the nearest end's
// beyond them, where calibrate timed them for n devices; nullopt where it did not. One
// device's forward and backward at `rows` (without the devices' shares) times this is
// weight_grad_shard's from kRatioFromRows rows per device: the ratio cancels what the probe
// leaves out.
std::optional<double> shared_steps_over_alone(const DeviceProfile& d, int64_t rows, int n);

// Where weight_grad_shard turns from the shared pass's seconds to the ratio, in rows per device.
// For the seconds at few rows: the alone pass varied between calibrations more than the shared
// one (held_out_caller_spin_xeon, at 16 rows: 6.4-7.3 ms for 784-8192-10 and 7.5-9.2 ms for the
// 6 x 1024 model, whose shared passes came within about 6% of the measured forward and
// backward), and the ratio put those two models' sharded steps at 16 rows per device +3% to
// +26% over; on held_out_shared_seconds_xeon the seconds brought the sharded steps at 16 rows
// to a median |step error| of 4.2% (the ratio: 9.0%). Against: on held_out_shared_landed_xeon
// the ratio came closer at every batch, 16 rows included (3.8% against 4.4%). For the ratio at
// more rows: on that set a median of 2.6% over the sharded steps at all four batches, the
// seconds alone 4.0%. This rule by rows, written after that set, was held out by
// held_out_rows_rule_xeon: the same 4 configurations missed in most runs as the seconds alone,
// none newly, and a median |step error| over the 48 sharded steps of 3.4% (the seconds alone
// 3.5%, the ratio alone 3.6% with 784-8192-10's sharded step at 16 rows missed too): within the
// spread between sets. The validation's 2 devices run 16, 64, 256 and 1024 rows per device, so
// nothing measured picks 32 over any turn between 17 and 64; docs/SCALING.md, "The rule by rows
// on a fresh set" and "The rule by rows, landed".
inline constexpr int64_t kRatioFromRows = 32;

// A device's micro-shard in deterministic mode over one device's step alone at its rows, all n
// devices at once over one shared parameter buffer with `local` micro-shards each, where
// calibrate timed them so (the `*_micro` timings, steps_at_once.h: each device's micro-shards
// after its update of its shard of the shared parameters, each a whole backward into its own
// gradient buffer, copied aside after it), at rows near `rows` (in log rows); nullopt where it
// did not, or with another count of micro-shards per device. Without it, the micro-shards are one
// device's steps slowed by the devices' shares (devices_share): on the Zen 4 the memory share,
// where the seed's 51 MB outgrow its 32 MiB L3, put the seed's deterministic step at 32 +19% to
// +23% over in all 3 runs of held_out_fresh_zen4, whose micro-shards ran at about one device's
// speed alone: both devices stream one weight buffer (docs/SCALING.md, "A fresh set on the Zen 4").
// On the fresh Xeon set held out from this (held_out_micro_xeon) the ratio was timed at 0.83-1.00
// at 6 rows, 0.99-1.12 at 12 and 0.89-1.06 at 24-1536 (0.92-1.05 interpolated to the micro-shards'
// 8, 32, 128 and 512 rows), and no deterministic configuration missed in most runs, with it or with
// the shares.
std::optional<double> micro_shards_over_alone(const DeviceProfile& d, int64_t rows, int n,
                                              int local);

}  // namespace tandem::detail
