#include "core/denormals.h"

#include <omp.h>

#include <algorithm>

#include "tandem/config.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace tandem::detail {
namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr unsigned kFlushToZero = 0x8000;       // MXCSR.FTZ: denormal results become zero
constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ: denormal inputs read as zero
constexpr unsigned kBits = kFlushToZero | kDenormalsAreZero;
#elif defined(__aarch64__)
constexpr uint64_t kFpcrFz = uint64_t{1} << 24;  // FPCR.FZ: both, for single and double
uint64_t read_fpcr() {
  uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return fpcr;
}
#endif

// The team's threads of `threads` each set their own mode (the caller's thread included).
void set_on_team(int threads, Denormals mode) {
#pragma omp parallel num_threads(threads)
  set_thread_denormals(mode);
}

}  // namespace

bool can_flush_denormals() {
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

Denormals thread_denormals() {
#if defined(__x86_64__) || defined(__i386__)
  return (_mm_getcsr() & kBits) == kBits ? Denormals::flushed : Denormals::kept;
#elif defined(__aarch64__)
  return (read_fpcr() & kFpcrFz) ? Denormals::flushed : Denormals::kept;
#else
  return Denormals::kept;
#endif
}

void set_thread_denormals(Denormals mode) {
#if defined(__x86_64__) || defined(__i386__)
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(mode == Denormals::flushed ? csr | kBits : csr & ~kBits);
#elif defined(__aarch64__)
  const uint64_t fpcr = read_fpcr();
  const uint64_t set = mode == Denormals::flushed ? fpcr | kFpcrFz : fpcr & ~kFpcrFz;
  asm volatile("msr fpcr, %0" : : "r"(set));
#else
  (void)mode;
#endif
}

void set_team_denormals(int threads, Denormals mode) {
  set_thread_denormals(mode);
  if (threads > 1) set_on_team(threads, mode);
}

Denormals compute_denormals() {
  return flush_denormals() ? Denormals::flushed : Denormals::kept;
}

ComputeDenormals::ComputeDenormals(int threads)
    : caller_(thread_denormals()),
      mode_(compute_denormals()),
      threads_(std::max(threads, omp_get_max_threads())) {
  set_team_denormals(threads_, mode_);
}

ComputeDenormals::~ComputeDenormals() {
  if (caller_ == mode_) return;
  // The call may have raised the team's size (the backend's omp_set_num_threads): threads
  // it started took the caller's mode then, which was mode_.
  set_team_denormals(std::max(threads_, omp_get_max_threads()), caller_);
}

}  // namespace tandem::detail
