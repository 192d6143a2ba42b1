// Convolution and pooling on oneDNN for the CPU backend. Tensors stay channels-last
// (nhwc) and kernels in Keras's (kh, kw, in, out) layout (oneDNN's hwio); where oneDNN's
// chosen implementation wants its weights in a blocked layout, a cached reorder converts
// them each call (weights change every step). Every primitive, its memory objects and its
// scratchpad are created once per shape and reused; a call only swaps data handles.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

#include "backend/backend.h"

namespace tandem::detail {

class CpuWindowOps {
 public:
  CpuWindowOps(dnnl::engine& engine, dnnl::stream& stream, int threads);
  ~CpuWindowOps();

  void conv2d_forward(const Window2d& w, const float* x, const float* kernel, const float* bias,
                      ActivationKind activation, float* y);
  void conv2d_backward_data(const Window2d& w, const float* dy, const float* kernel, float* dx,
                            bool accumulate);
  void conv2d_backward_weights(const Window2d& w, const float* x, const float* dy, float* dkernel,
                               float* dbias, bool accumulate);
  void pool2d_forward(PoolKind kind, const Window2d& w, const float* x, float* y, void* workspace);
  void pool2d_backward(PoolKind kind, const Window2d& w, const float* dy, const void* workspace,
                       float* dx, bool accumulate);

  struct Plan;
  using Key = std::array<int64_t, 21>;

 private:
  Plan& plan(const Key& key, const Window2d& w);

  dnnl::engine& engine_;
  dnnl::stream& stream_;
  int threads_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace tandem::detail
