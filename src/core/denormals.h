// Denormal (subnormal) floats, below 2^-126 in float32, can cost an x86 core a microcode
// assist per instruction that meets one. Training drives optimizer state there: on a Xeon a
// 784-256-256-10 step on Fashion-MNIST slowed to 1.98x by its fifth epoch with RMSprop and
// 2.70x with Adam, the time in the update, and not with SGD (docs/PERFORMANCE.md, "Denormal
// floats flushed"). TensorFlow flushes denormals to zero on every thread its ops run on;
// tandem does the same while it computes, and tandem::set_flush_denormals(false) keeps them.
//
// The mode is per thread (x86-64: MXCSR's FTZ and DAZ bits; AArch64: FPCR.FZ), and a new
// thread starts with its creator's (pthread_create). tandem sets it:
// - for one call of fit, evaluate, predict or train_on_batch, on the caller and on each
//   thread of the caller's OpenMP team (ComputeDenormals). Each thread keeps the bits it had
//   and gets them back when the call returns or throws, so a call nested in another (a
//   predict in a callback) leaves the outer call's team as it found it;
// - callbacks run with the caller's own bits on the caller's thread (its team is not reset:
//   OpenMP work a callback starts runs on threads that flush during a fit);
// - the devices' threads, their OpenMP teams and MPI's communication thread are made inside
//   fit, so they start in its mode; the `tandem` tool's own thread starts flushed.
// Team threads are found as OpenMP's runtime keeps them: libgomp (GCC's, which tandem links)
// runs a thread's later regions of up to the same size on the same threads.
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
// its OpenMP team of `threads` compute in compute_denormals(); each gets its own bits back
// on return (or an exception). Threads the call starts beyond `threads` (a larger region)
// take the caller's mode then, and are set back to the caller's bits.
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
