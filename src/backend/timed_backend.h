// A Backend that forwards every call to another and adds the call's seconds to a tally by
// kind of kernel: what `tandem calibrate` reads to learn how much of a measured training
// step its convolutions took (not the step minus a model of everything else).
#pragma once

#include <array>
#include <memory>

#include "backend/backend.h"

namespace tandem {

enum class KernelKind { gemm, conv, pool, batch_norm, elementwise, count };
const char* kernel_kind_name(KernelKind kind);

// Seconds spent in each kind of kernel. One tally per device: its backend writes it from the
// device's thread; read it only between steps (a step joins its device threads).
struct KernelSeconds {
  std::array<double, static_cast<size_t>(KernelKind::count)> seconds{};
  std::array<int64_t, static_cast<size_t>(KernelKind::count)> calls{};

  double operator[](KernelKind k) const { return seconds[static_cast<size_t>(k)]; }
  void reset() { *this = KernelSeconds{}; }
};

// `inner` with every call timed into `tally` (shared: the caller keeps reading it).
std::unique_ptr<Backend> make_timed_backend(std::unique_ptr<Backend> inner,
                                            std::shared_ptr<KernelSeconds> tally);

}  // namespace tandem
