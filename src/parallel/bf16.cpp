#include "parallel/bf16.h"

#include "core/simd.h"  // TANDEM_MULTIVERSION: each loop for AVX-512, AVX2 and baseline

namespace tandem::detail {

TANDEM_MULTIVERSION void pack_bf16(const float* __restrict in, uint16_t* __restrict out,
                                   int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = to_bf16(in[i]);
}

TANDEM_MULTIVERSION void unpack_bf16(const uint16_t* __restrict in, float* __restrict out,
                                     int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]);
}

TANDEM_MULTIVERSION void sum_bf16(const uint16_t* __restrict in, uint16_t* __restrict inout,
                                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) inout[i] = to_bf16(from_bf16(in[i]) + from_bf16(inout[i]));
}

}  // namespace tandem::detail
