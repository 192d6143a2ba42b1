// Denormal (subnormal) floats, below 2^-126 in float32, can cost an x86 core a microcode
// assist per instruction that meets one. Training drives optimizer state there: on a Xeon a
// 784-256-256-10 step on Fashion-MNIST slowed to 1.98x by its fifth epoch with RMSprop and
// 2.70x with Adam, the time in the update, and not with SGD (docs/PERFORMANCE.md, "Denormal
// floats flushed"). TensorFlow flushes denormals to zero on every thread its ops run on;
// tandem does the same while it computes, and tandem::set_flush_denormals(false) keeps them.
//
// The mode is per thread (x86-64: MXCSR's FTZ and DAZ bits; AArch64: FPCR.FZ), and a new
// thread starts with its creator's (pthread_create). tandem sets it:
// - for one call of fit, evaluate, predict or train_on_batch, on the caller and on every
//   thread of the caller's OpenMP team (ComputeDenormals). On return (or an exception) the
//   caller gets its own bits back and the team's other threads get the caller's bits too:
//   OpenMP's runtime ends and starts a caller's team threads as its regions change size
//   (libgomp ends those a smaller region leaves out), and a thread it starts takes the
//   caller's bits, so the team follows the caller. A call nested in another (a predict in a
//   callback) hands the team back to the enclosing call's bits;
// - callbacks run with the caller's own bits on the caller's thread. The team is not reset
//   for them: OpenMP work a callback starts in tandem's runtime runs flushed where it meets
//   threads the call set, and threads a callback's region starts keep the caller's bits;
// - the devices' threads, their OpenMP teams and MPI's communication thread start with the
//   bits of the thread that makes them: inside fit, its mode. The `tandem` tool's own thread
//   starts flushed, so its probes (which make device groups outside fit) measure in it.
#pragma once

#include <cstdint>

namespace tandem::detail {

enum class Denormals : uint8_t { kept, flushed };

// Whether this CPU can flush (x86-64 and AArch64); elsewhere flushing does nothing.
bool can_flush_denormals();

// This thread's denormal bits exactly (x86-64: FTZ and DAZ, either may be set alone), and
// the mode they make: flushed when results and inputs below 2^-126 both become zero.
uint32_t thread_denormal_bits();
void set_thread_denormal_bits(uint32_t bits);
uint32_t denormal_bits(Denormals mode);
Denormals thread_denormals();
void set_thread_denormals(Denormals mode);

// The mode the process computes in: tandem::flush_denormals().
Denormals compute_denormals();

// For one call of fit, evaluate, predict or train_on_batch: the caller and each thread of
// its OpenMP team of `threads` compute in compute_denormals(). On return (or an exception)
// the caller and its team (as large as OpenMP's thread count then, if larger) get the
// caller's bits, or, inside another call on this thread, the team gets that call's.
class ComputeDenormals {
 public:
  explicit ComputeDenormals(int threads);
  ~ComputeDenormals();
  ComputeDenormals(const ComputeDenormals&) = delete;
  ComputeDenormals& operator=(const ComputeDenormals&) = delete;

  uint32_t caller_bits() const { return caller_bits_; }

 private:
  int threads_;
  uint32_t caller_bits_;
};

// This thread with `bits` for a scope (a callback in the caller's own mode); the team is not
// touched.
class ScopedThreadDenormals {
 public:
  explicit ScopedThreadDenormals(uint32_t bits);
  ~ScopedThreadDenormals();
  ScopedThreadDenormals(const ScopedThreadDenormals&) = delete;
  ScopedThreadDenormals& operator=(const ScopedThreadDenormals&) = delete;

 private:
  uint32_t previous_;
};

}  // namespace tandem::detail
