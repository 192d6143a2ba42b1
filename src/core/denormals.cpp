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

// The bits each thread had before each ComputeDenormals that set it, innermost last.
thread_local std::vector<uint32_t> saved_bits;

void save_and_set(uint32_t bits) {
  saved_bits.push_back(thread_denormal_bits());
  set_thread_denormal_bits(bits);
}

// Back to the bits saved on this thread, or `otherwise` where none were (a thread started
// during the call).
void restore(uint32_t otherwise) {
  if (saved_bits.empty()) {
    set_thread_denormal_bits(otherwise);
    return;
  }
  set_thread_denormal_bits(saved_bits.back());
  saved_bits.pop_back();
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
  if (threads_ == 1) {
    save_and_set(bits);
    return;
  }
#pragma omp parallel num_threads(threads_)
  save_and_set(bits);
}

ComputeDenormals::~ComputeDenormals() {
  // The call may have raised the team's size (the backend's omp_set_num_threads).
  const int team = std::max(threads_, omp_get_max_threads());
  if (team == 1) {
    restore(caller_bits_);
    return;
  }
  const uint32_t caller = caller_bits_;
#pragma omp parallel num_threads(team)
  restore(caller);
}

ScopedThreadDenormals::ScopedThreadDenormals(uint32_t bits) : previous_(thread_denormal_bits()) {
  if (bits != previous_) set_thread_denormal_bits(bits);
}

ScopedThreadDenormals::~ScopedThreadDenormals() {
  if (thread_denormal_bits() != previous_) set_thread_denormal_bits(previous_);
}

}  // namespace tandem::detail
