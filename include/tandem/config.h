// Process-wide settings, like keras.utils.set_random_seed and torch.set_num_threads.
#pragma once

#include <cstdint>

namespace tandem {

// Seeds weight initialisation, shuffling and dropout for everything that follows.
// Without it, seeds come from std::random_device.
void set_random_seed(uint64_t seed);
// Draws the next seed from the global stream (used for models and fits without a seed).
uint64_t next_seed();

// Threads a single device uses (<= 0: every core this process may run on).
void set_num_threads(int threads);
int num_threads();

}  // namespace tandem
