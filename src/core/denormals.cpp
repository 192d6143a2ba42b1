#include "core/denormals.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "tandem/config.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace tandem::detail {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kFlushToZero = 0x8000;       // MXCSR.FTZ: denormal results become zero
constexpr uint32_t kDenormalsAreZero = 0x0040;  // MXCSR.DAZ: denormal inputs read as zero
constexpr uint32_t kAllBits = kFlushToZero | kDenormalsAreZero;
#elif defined(__aarch64__)
constexpr uint32_t kAllBits = uint32_t{1} << 24;  // FPCR.FZ: both, single and double
uint64_t read_fpcr() {
  uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return fpcr;
}
#else
constexpr uint32_t kAllBits = 0;
#endif

// The compute bits of the ComputeDenormals in progress on this (calling) thread, innermost
// last: a call nested in another (a predict in a callback) hands the team back to the
// enclosing call's bits, not to the callback's.
thread_local std::vector<uint32_t> active_calls;

// `master` on the calling thread, `others` on the other threads of its team of `threads`.
void set_team(int threads, uint32_t master, uint32_t others) {
  if (threads <= 1) {
    set_thread_denormal_bits(master);
    return;
  }
#pragma omp parallel num_threads(threads)
  set_thread_denormal_bits(omp_get_thread_num() == 0 ? master : others);
}

}  // namespace

bool can_flush_denormals() {
  return kAllBits != 0;
}

uint32_t thread_denormal_bits() {
#if defined(__x86_64__)
  return _mm_getcsr() & kAllBits;
#elif defined(__aarch64__)
  return static_cast<uint32_t>(read_fpcr()) & kAllBits;
#else
  return 0;
#endif
}

void set_thread_denormal_bits(uint32_t bits) {
  bits &= kAllBits;
#if defined(__x86_64__)
  _mm_setcsr((_mm_getcsr() & ~kAllBits) | bits);
#elif defined(__aarch64__)
  const uint64_t fpcr = (read_fpcr() & ~uint64_t{kAllBits}) | bits;
  asm volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

uint32_t denormal_bits(Denormals mode) {
  return mode == Denormals::flushed ? kAllBits : 0;
}

Denormals thread_denormals() {
  return kAllBits != 0 && thread_denormal_bits() == kAllBits ? Denormals::flushed : Denormals::kept;
}

void set_thread_denormals(Denormals mode) {
  set_thread_denormal_bits(denormal_bits(mode));
}

Denormals compute_denormals() {
  return flush_denormals() ? Denormals::flushed : Denormals::kept;
}

ComputeDenormals::ComputeDenormals(int threads)
    : threads_(std::max(threads, 1)), caller_bits_(thread_denormal_bits()) {
  const uint32_t bits = denormal_bits(compute_denormals());
  active_calls.push_back(bits);
  set_team(threads_, bits, bits);
}

ComputeDenormals::~ComputeDenormals() {
  active_calls.pop_back();
  const uint32_t team = active_calls.empty() ? caller_bits_ : active_calls.back();
  // The call may have raised the team's size (the backend's omp_set_num_threads).
  set_team(std::max(threads_, omp_get_max_threads()), caller_bits_, team);
}

ScopedThreadDenormals::ScopedThreadDenormals(uint32_t bits) : previous_(thread_denormal_bits()) {
  if (bits != previous_) set_thread_denormal_bits(bits);
}

ScopedThreadDenormals::~ScopedThreadDenormals() {
  if (thread_denormal_bits() != previous_) set_thread_denormal_bits(previous_);
}

}  // namespace tandem::detail
