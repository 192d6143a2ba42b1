#include "parallel/bf16.h"

// Each loop is compiled for AVX-512, AVX2 and baseline x86-64, the one for this CPU chosen
// when the library loads (GCC's target_clones); elsewhere, the compiler's default target.
// Not under ThreadSanitizer: the clones' resolver runs before its runtime is ready and the
// program crashes at load.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define TANDEM_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define TANDEM_CPU_CLONES
#endif

namespace tandem::detail {

TANDEM_CPU_CLONES void pack_bf16(const float* __restrict in, uint16_t* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = to_bf16(in[i]);
}

TANDEM_CPU_CLONES void unpack_bf16(const uint16_t* __restrict in, float* __restrict out,
                                   int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]);
}

TANDEM_CPU_CLONES void sum_bf16(const uint16_t* __restrict in, uint16_t* __restrict inout,
                                int64_t n) {
  for (int64_t i = 0; i < n; ++i) inout[i] = to_bf16(from_bf16(in[i]) + from_bf16(inout[i]));
}

}  // namespace tandem::detail
