// Denormal (subnormal) floats, below 2^-126 in float32, cost a microcode assist on x86
// wherever an instruction reads or writes one: tens to hundreds of cycles instead of one.
// Training drives some values there as it goes (RMSprop's and Adam's averages of a
// gradient that stays zero decay through them step by step), and a small model's step
// slowed 1.7x by its fourth epoch on Fashion-MNIST (docs/PERFORMANCE.md, "Denormal floats
// flushed"). TensorFlow flushes denormals to zero on every thread it computes on; tandem does
// the same, and tandem::set_flush_denormals(false) keeps them (tandem/config.h).
//
// The mode is per thread (x86: MXCSR's FTZ and DAZ bits; AArch64: FPCR.FZ), and a thread
// starts with its creator's. tandem sets it on every thread it computes on:
// - the caller of fit, evaluate, predict and train_on_batch, and that thread's OpenMP team,
//   for the call only (ComputeDenormals below); callbacks run in the caller's own mode;
// - the devices' threads and their OpenMP teams, for their lifetime, in the mode of the
//   thread that made the group (DeviceGroup), and MPI's communication thread likewise.
#pragma once

#include <cstdint>

namespace tandem::detail {

enum class Denormals : uint8_t { kept, flushed };

// Whether this CPU can flush (x86-64 and AArch64); elsewhere flushing does nothing.
bool can_flush_denormals();

// This thread's mode: flushed when results and inputs below 2^-126 both become zero.
Denormals thread_denormals();
void set_thread_denormals(Denormals mode);

// The mode on this thread and on each thread of its OpenMP team of `threads`: the team's
// threads run an empty parallel region that sets it. OpenMP keeps a thread's team between
// regions, so later regions of up to `threads` run on those threads; a larger one starts
// new threads, which take this thread's mode.
void set_team_denormals(int threads, Denormals mode);

// The mode the process computes in: tandem::flush_denormals().
Denormals compute_denormals();

// For one call of fit, evaluate, predict or train_on_batch: the caller and its OpenMP team
// compute in compute_denormals(); on return (or an exception) they are back in the caller's
// mode. `threads` is the most the call's team uses (the team OpenMP would start now, if
// larger, is set too). The team is set on entry whatever the caller's mode (its threads may
// predate a change of it), and set back on exit only when the caller's mode differs.
class ComputeDenormals {
 public:
  explicit ComputeDenormals(int threads);
  ~ComputeDenormals();
  ComputeDenormals(const ComputeDenormals&) = delete;
  ComputeDenormals& operator=(const ComputeDenormals&) = delete;

  Denormals caller() const { return caller_; }

 private:
  Denormals caller_;
  Denormals mode_;
  int threads_;
};

// This thread in `mode` for a scope (a callback in the caller's own mode); the team is not
// touched.
class ScopedThreadDenormals {
 public:
  explicit ScopedThreadDenormals(Denormals mode) : previous_(thread_denormals()) {
    if (mode != previous_) set_thread_denormals(mode);
  }
  ~ScopedThreadDenormals() {
    if (thread_denormals() != previous_) set_thread_denormals(previous_);
  }
  ScopedThreadDenormals(const ScopedThreadDenormals&) = delete;
  ScopedThreadDenormals& operator=(const ScopedThreadDenormals&) = delete;

 private:
  Denormals previous_;
};

}  // namespace tandem::detail
