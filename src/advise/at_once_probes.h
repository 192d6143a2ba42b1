// Work every device does at once over memory the devices share, for `tandem calibrate`: the
// optimizer's update (own copies, or shards of one shared buffer) and deterministic mode's
// exchange (its copies aside and the fixed tree), each against one device alone.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "advise/hardware_profile.h"
#include "core/aligned_buffer.h"
#include "optim/optimizer_kernel.h"
#include "parallel/device_group.h"

namespace tandem::detail {

// The optimizer's update at one size on `group`'s devices (2 or more; RMSprop's kernel,
// `threads` threads per device), as update_contention times it: before each timed update every
// device writes its gradients and reads the parameters it will update (as backward and forward
// leave them). One round: next_round(), then any of alone(), own(), shard(), in that order.
class UpdateAtOnce {
 public:
  UpdateAtOnce(DeviceGroup& group, int64_t bytes, int threads);
  void next_round();  // the gradients' sign and the update's iteration move on
  double alone();     // device 0 updates one whole buffer: seconds
  double own();       // every device its whole own copy: the devices' mean
  double shard();     // every device reads one shared buffer whole, then updates its 1/n
  int64_t floats() const { return n_; }
  // Throws unless what the rounds read stayed finite (they ran, and ran right).
  void check_finite() const;

 private:
  void prepare(int d, const float* read);
  void timed_update(int d, float* w, float* s, int64_t begin, int64_t end);

  DeviceGroup& group_;
  int devices_, threads_;
  int64_t n_;
  std::unique_ptr<OptimizerKernel> kernel_;
  // Each device's own parameters, accumulator and gradients; one shared copy of the first two.
  std::vector<AlignedBuffer> params_, state_, grads_;
  AlignedBuffer shared_, shared_state_;
  std::vector<double> each_, sinks_;
  float value_ = 1e-4f;
  int64_t iteration_ = 0;
};

// The optimizer's update (RMSprop's kernel, `threads` threads per device) on a DeviceGroup of
// `devices` (2 or more) devices at once against device 0 alone, for parameters of each of
// `bytes` (ascending): before each timed update every device writes its gradients and reads
// the parameters it will update (as backward and forward leave them). Alone: device 0 updates
// one whole buffer. own: every device updates the whole of its own copy (the devices' mean
// timed, as the step's phases are), over alone. shard: every device reads one shared buffer whole,
// then updates its 1/n of it, over alone / n. Medians of `repeats` rounds, the three interleaved,
// each round in a window of its own (window_check.h, in_quiet_windows: timed again where the
// devices' cores were apart), and in `window` where the rounds of every size ran.
std::vector<UpdateContention> update_contention(const std::vector<int64_t>& bytes, int devices,
                                                int threads, int repeats, ProbeWindow& window);

// Deterministic mode's exchange in one process (mirrored.cpp, deterministic_gradients) on a
// DeviceGroup of `devices` (2 or more) devices at once, for gradients of each of `bytes`
// (ascending): every device reads its parameters and writes its gradients (as backward leaves
// them), copies them aside, and so for each of its `shards` micro-shards, then sums the copies
// in the fixed tree (tree_sum) into its gradient buffer; the devices start each timed part
// together. Seconds of one copy and of the tree, the devices' mean, medians of `repeats`
// rounds.
std::vector<ExchangeSeconds> deterministic_exchange(const std::vector<int64_t>& bytes, int devices,
                                                    int shards, int repeats);

// The gradient sizes calibrate times deterministic_exchange at for `devices` devices with
// `shards` micro-shards each: powers of two from 256 KiB up to the largest size whose
// parameters, gradients and copies on every device fit `shared_cache` bytes (devices x
// (shards + 2) x size), and that size itself; up to 4 MiB where the cache is unknown (0), and
// never over 256 MiB. Ascending.
std::vector<int64_t> exchange_sizes(int64_t shared_cache, int devices, int shards);

// smallest, doubled while it stays within largest, then largest itself where the doubling
// missed it: a probe's sizes, ascending. Throws unless 0 < smallest <= largest <= 2^60.
std::vector<int64_t> doubling_sizes(int64_t smallest, int64_t largest);

}  // namespace tandem::detail
