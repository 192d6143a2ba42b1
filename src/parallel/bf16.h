// bfloat16: the high half of a float32, as gradients cross MPI ranks with
// --grad-compression bf16 (mpi_world.cpp). The three loops over whole buffers are the ones
// the communication thread runs and calibrate times (advise/probes.cpp), so the cost model
// measures the code that runs.
#pragma once

#include <bit>
#include <cstdint>

namespace tandem::detail {

// Rounded to nearest even (NaN stays NaN, quiet). Branch-free, so the loops vectorize.
inline uint16_t to_bf16(float f) {
  const auto u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float from_bf16(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// out[i] = to_bf16(in[i]), i < n. The buffers do not overlap.
void pack_bf16(const float* in, uint16_t* out, int64_t n);
// out[i] = from_bf16(in[i]), i < n. The buffers do not overlap.
void unpack_bf16(const uint16_t* in, float* out, int64_t n);
// inout[i] = to_bf16(from_bf16(in[i]) + from_bf16(inout[i])): the MPI sum of two ranks'
// bfloat16 gradients, added in float32. The buffers do not overlap.
void sum_bf16(const uint16_t* in, uint16_t* inout, int64_t n);

}  // namespace tandem::detail
