// Hot element-wise loops are compiled for AVX-512 (x86-64-v4: F, BW, DQ, VL), AVX2 and
// baseline x86-64; the loader picks the best the CPU has (GCC function multi-versioning).
// The library stays portable without -march=native. Sanitizer builds use one version: the
// loader runs ifunc resolvers before the sanitizer runtime is up, and an instrumented
// resolver crashes there.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define TANDEM_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define TANDEM_MULTIVERSION
#endif
