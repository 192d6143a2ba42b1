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
// TensorFlow does on its threads: optimizer state that decays through that range slowed a
// small model's step up to 2.7x on a Xeon (docs/PERFORMANCE.md, "Denormal floats flushed").
// On by default; false keeps them (IEEE gradual underflow, PyTorch's default), for fit,
// evaluate, predict and train_on_batch calls that start after it. When a call returns the
// calling thread has its own setting back and its OpenMP threads have the calling
// thread's (inside a fit's callback, the fit's); callbacks run with the calling thread's
// own. Where the CPU cannot flush (neither x86-64 nor AArch64), true changes nothing.
void set_flush_denormals(bool flush);
bool flush_denormals();

}  // namespace tandem
