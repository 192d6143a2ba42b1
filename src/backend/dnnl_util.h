// What the oneDNN-backed CPU operations share: running a primitive with a message that
// names the operation, and adding a scratch result into an accumulated output.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "core/parallel_for.h"
#include "tandem/error.h"

namespace tandem::detail {

// Executes and waits; a oneDNN failure becomes a BackendError naming what() (called only
// then, so a warm call builds no string).
template <class Describe>
void execute_primitive(dnnl::primitive& primitive, dnnl::stream& stream,
                       const std::unordered_map<int, dnnl::memory>& args, Describe&& what) {
  try {
    primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw BackendError("oneDNN " + what() + " failed: " + e.what());
  }
}

// dst (n) += src, on `threads` threads when large.
inline void add_into(float* dst, const float* src, int64_t n, int threads) {
  simd_for(n, threads, int64_t{1} << 15, [=](int64_t i) { dst[i] += src[i]; });
}

}  // namespace tandem::detail
