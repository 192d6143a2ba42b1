// bfloat16: the high half of a float32, as gradients cross MPI ranks with
// --grad-compression bf16 (mpi_world.cpp) and as the cost model's calibration times it.
#pragma once

#include <bit>
#include <cstdint>

namespace tandem::detail {

// Rounded to nearest even (NaN stays NaN).
inline uint16_t to_bf16(float f) {
  const auto u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float from_bf16(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

}  // namespace tandem::detail
