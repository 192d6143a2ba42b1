// Process-wide settings, like keras.utils.set_random_seed and torch.set_num_threads.
#pragma once

#include <cstdint>

namespace tandem {

// Seeds weight initialisation, shuffling and dropout for everything that follows.
// Without it, seeds come from std::random_device.
void set_random_seed(uint64_t seed);
// Draws the next seed from the global stream (used for models and fits without a seed).
uint64_t next_seed();

// Threads a single device uses (<= 0: every core this process may run on). More than
// kOversubscription per available core is a ConfigError (it crashed inside OpenMP).
void set_num_threads(int threads);
int num_threads();
// Cores this process may run on (its affinity mask), and the most threads (and devices x
// threads per device) tandem will start: kOversubscription of them per core.
inline constexpr int kOversubscription = 8;
int available_cores();
int max_threads();

// Denormal floats (below 2^-126 in float32) flushed to zero while tandem computes, as
// TensorFlow does on its threads: on x86 each one costs an instruction tens of cycles or
// more, and a small model's step slowed 1.7x by its fourth epoch where training had driven
// values there. On by default; false keeps them (IEEE gradual underflow, like PyTorch's
// default), for fits, evaluations and predictions that start after the call. The caller's
// own thread is back in its mode when a call returns, and callbacks run in it. Where the
// CPU cannot flush (neither x86-64 nor AArch64), true changes nothing.
void set_flush_denormals(bool flush);
bool flush_denormals();

}  // namespace tandem
