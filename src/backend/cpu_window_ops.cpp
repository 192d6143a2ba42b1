#include "backend/cpu_window_ops.h"

#include <omp.h>

#include <string>
#include <unordered_map>

#include "backend/cpu_max_pool.h"
#include "backend/dnnl_util.h"
#include "core/aligned_buffer.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

enum class Op : int64_t {
  conv_forward,
  conv_backward_data,
  conv_backward_weights,
  pool_train,
  pool_infer,
  pool_backward
};

// (batch, h, w, c) channels-last, as every tandem activation is stored.
memory::desc activation_desc(int64_t batch, int64_t h, int64_t w, int64_t c) {
  return memory::desc({batch, c, h, w}, memory::data_type::f32, Tag::nhwc);
}
memory::desc input_desc(const Window2d& w) {
  return activation_desc(w.batch, w.in_h, w.in_w, w.in_c);
}
memory::desc output_desc(const Window2d& w) {
  return activation_desc(w.batch, w.out_h, w.out_w, w.out_c);
}
// Keras's kernel (kh, kw, in, out) is oneDNN's hwio; `any` lets the primitive choose.
memory::desc kernel_desc(const Window2d& w, Tag tag) {
  return memory::desc({w.out_c, w.in_c, w.kernel_h, w.kernel_w}, memory::data_type::f32, tag);
}
memory::desc bias_desc(const Window2d& w) {
  return memory::desc({w.out_c}, memory::data_type::f32, Tag::x);
}
memory::dims strides(const Window2d& w) {
  return {w.stride_h, w.stride_w};
}
memory::dims kernel_dims(const Window2d& w) {
  return {w.kernel_h, w.kernel_w};
}
memory::dims dilates(const Window2d& w) {
  return {w.dilation_h - 1, w.dilation_w - 1};
}
memory::dims pad_before(const Window2d& w) {
  return {w.pad_top, w.pad_left};
}
memory::dims pad_after(const Window2d& w) {
  return {w.pad_bottom, w.pad_right};
}

dnnl::primitive_attr user_scratchpad(ActivationKind activation = ActivationKind::linear) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (activation != ActivationKind::linear) {
    dnnl::algorithm algorithm = dnnl::algorithm::eltwise_relu;
    if (activation == ActivationKind::sigmoid) algorithm = dnnl::algorithm::eltwise_logistic;
    if (activation == ActivationKind::tanh) algorithm = dnnl::algorithm::eltwise_tanh;
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, algorithm, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  return attr;
}

dnnl::convolution_forward::primitive_desc conv_forward_desc(const Window2d& w, bool has_bias,
                                                            ActivationKind activation,
                                                            const dnnl::engine& engine) {
  const auto prop = dnnl::prop_kind::forward_training;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  const auto desc =
      has_bias
          ? dnnl::convolution_forward::desc(prop, algorithm, input_desc(w),
                                            kernel_desc(w, Tag::any), bias_desc(w), output_desc(w),
                                            strides(w), dilates(w), pad_before(w), pad_after(w))
          : dnnl::convolution_forward::desc(prop, algorithm, input_desc(w),
                                            kernel_desc(w, Tag::any), output_desc(w), strides(w),
                                            dilates(w), pad_before(w), pad_after(w));
  return {desc, user_scratchpad(activation), engine};
}

dnnl::pooling_forward::primitive_desc pool_forward_desc(PoolKind kind, const Window2d& w,
                                                        bool training, const dnnl::engine& engine) {
  const auto algorithm = kind == PoolKind::max ? dnnl::algorithm::pooling_max
                                               : dnnl::algorithm::pooling_avg_exclude_padding;
  const dnnl::pooling_forward::desc desc(
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, algorithm,
      input_desc(w), output_desc(w), strides(w), kernel_dims(w), pad_before(w), pad_after(w));
  return {desc, user_scratchpad(), engine};
}

std::string describe(const Window2d& w) {
  const auto s = [](int64_t v) { return std::to_string(v); };
  return "(" + s(w.batch) + ", " + s(w.in_h) + ", " + s(w.in_w) + ", " + s(w.in_c) + ") -> (" +
         s(w.batch) + ", " + s(w.out_h) + ", " + s(w.out_w) + ", " + s(w.out_c) + "), window " +
         s(w.kernel_h) + "x" + s(w.kernel_w) + ", strides " + s(w.stride_h) + "x" + s(w.stride_w) +
         ", dilation " + s(w.dilation_h) + "x" + s(w.dilation_w) + ", padding " + s(w.pad_top) +
         "," + s(w.pad_bottom) + "," + s(w.pad_left) + "," + s(w.pad_right);
}

}  // namespace

struct CpuWindowOps::Plan {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  // Data-handle slots; which ones a plan uses depends on its operation.
  memory src, dst, weights_user, weights_internal, bias, workspace, scratchpad;
  // Set when the primitive's weights layout is not Keras's: converts between the two.
  dnnl::reorder weights_reorder;
  bool reorders_weights = false;
  // When accumulating, the primitive writes here first, then the result is added.
  AlignedBuffer temp, temp_bias;
  int64_t workspace_bytes = 0;
};

CpuWindowOps::CpuWindowOps(dnnl::engine& engine, dnnl::stream& stream, int threads)
    : engine_(engine), stream_(stream), threads_(threads) {}
CpuWindowOps::~CpuWindowOps() = default;

CpuWindowOps::Plan& CpuWindowOps::plan(const Key& key, const Window2d& w) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  const auto op = static_cast<Op>(key[0]);
  const bool has_bias = key[2] != 0, accumulate = key[3] != 0;
  auto p = std::make_unique<Plan>();
  const auto none = [](const memory::desc& d, const dnnl::engine& e) {
    return memory(d, e, DNNL_MEMORY_NONE);
  };
  // The kernel in Keras's layout, and the primitive's own copy when its layout differs;
  // `to_internal`: the reorder runs Keras -> primitive (forward, backward data), else back.
  const auto kernel_slot = [&](const memory::desc& wanted, bool to_internal) {
    p->weights_user = none(kernel_desc(w, Tag::hwio), engine_);
    if (wanted == p->weights_user.get_desc()) return p->weights_user;
    p->weights_internal = memory(wanted, engine_);
    p->reorders_weights = true;
    p->weights_reorder = to_internal ? dnnl::reorder(p->weights_user, p->weights_internal)
                                     : dnnl::reorder(p->weights_internal, p->weights_user);
    return p->weights_internal;
  };
  omp_set_num_threads(threads_);  // oneDNN picks its blocking for the threads it will run
  try {
    memory::desc scratchpad;
    switch (op) {
      case Op::conv_forward: {
        const auto pd =
            conv_forward_desc(w, has_bias, static_cast<ActivationKind>(key[1]), engine_);
        p->primitive = dnnl::convolution_forward(pd);
        p->src = none(pd.src_desc(), engine_);
        p->dst = none(pd.dst_desc(), engine_);
        p->args = {{DNNL_ARG_SRC, p->src},
                   {DNNL_ARG_WEIGHTS, kernel_slot(pd.weights_desc(), true)},
                   {DNNL_ARG_DST, p->dst}};
        if (has_bias) p->args.emplace(DNNL_ARG_BIAS, p->bias = none(bias_desc(w), engine_));
        scratchpad = pd.scratchpad_desc();
        break;
      }
      case Op::conv_backward_data: {
        const auto hint = conv_forward_desc(w, false, ActivationKind::linear, engine_);
        const dnnl::convolution_backward_data::desc desc(
            dnnl::algorithm::convolution_direct, input_desc(w), kernel_desc(w, Tag::any),
            output_desc(w), strides(w), dilates(w), pad_before(w), pad_after(w));
        const dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), engine_,
                                                                 hint);
        p->primitive = dnnl::convolution_backward_data(pd);
        p->src = none(pd.diff_src_desc(), engine_);  // written: dx
        p->dst = none(pd.diff_dst_desc(), engine_);  // read: dy
        p->args = {{DNNL_ARG_DIFF_SRC, p->src},
                   {DNNL_ARG_WEIGHTS, kernel_slot(pd.weights_desc(), true)},
                   {DNNL_ARG_DIFF_DST, p->dst}};
        if (accumulate) p->temp.resize(w.input_size());
        scratchpad = pd.scratchpad_desc();
        break;
      }
      case Op::conv_backward_weights: {
        const auto hint = conv_forward_desc(w, has_bias, ActivationKind::linear, engine_);
        const auto algorithm = dnnl::algorithm::convolution_direct;
        const auto desc =
            has_bias ? dnnl::convolution_backward_weights::desc(
                           algorithm, input_desc(w), kernel_desc(w, Tag::any), bias_desc(w),
                           output_desc(w), strides(w), dilates(w), pad_before(w), pad_after(w))
                     : dnnl::convolution_backward_weights::desc(
                           algorithm, input_desc(w), kernel_desc(w, Tag::any), output_desc(w),
                           strides(w), dilates(w), pad_before(w), pad_after(w));
        const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(),
                                                                    engine_, hint);
        p->primitive = dnnl::convolution_backward_weights(pd);
        p->src = none(pd.src_desc(), engine_);
        p->dst = none(pd.diff_dst_desc(), engine_);
        p->args = {{DNNL_ARG_SRC, p->src},
                   {DNNL_ARG_DIFF_WEIGHTS, kernel_slot(pd.diff_weights_desc(), false)},
                   {DNNL_ARG_DIFF_DST, p->dst}};
        if (has_bias) p->args.emplace(DNNL_ARG_DIFF_BIAS, p->bias = none(bias_desc(w), engine_));
        if (accumulate) {
          p->temp.resize(w.kernel_h * w.kernel_w * w.in_c * w.out_c);
          if (has_bias) p->temp_bias.resize(w.out_c);
        }
        scratchpad = pd.scratchpad_desc();
        break;
      }
      case Op::pool_train:
      case Op::pool_infer: {
        const auto pd =
            pool_forward_desc(static_cast<PoolKind>(key[1]), w, op == Op::pool_train, engine_);
        p->primitive = dnnl::pooling_forward(pd);
        p->src = none(pd.src_desc(), engine_);
        p->dst = none(pd.dst_desc(), engine_);
        p->args = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->dst}};
        p->workspace_bytes = static_cast<int64_t>(pd.workspace_desc().get_size());
        if (p->workspace_bytes > 0) {
          if (p->workspace_bytes > w.output_size() * kPoolWorkspaceBytesPerOutput) {
            throw BackendError("oneDNN pooling " + describe(w) + " wants a workspace of " +
                               std::to_string(p->workspace_bytes) + " bytes, more than " +
                               std::to_string(kPoolWorkspaceBytesPerOutput) +
                               " per output element");
          }
          p->args.emplace(DNNL_ARG_WORKSPACE, p->workspace = none(pd.workspace_desc(), engine_));
        }
        scratchpad = pd.scratchpad_desc();
        break;
      }
      case Op::pool_backward: {
        const auto kind = static_cast<PoolKind>(key[1]);
        const auto hint = pool_forward_desc(kind, w, true, engine_);
        const dnnl::pooling_backward::desc desc(
            kind == PoolKind::max ? dnnl::algorithm::pooling_max
                                  : dnnl::algorithm::pooling_avg_exclude_padding,
            input_desc(w), output_desc(w), strides(w), kernel_dims(w), pad_before(w), pad_after(w));
        const dnnl::pooling_backward::primitive_desc pd(desc, user_scratchpad(), engine_, hint);
        p->primitive = dnnl::pooling_backward(pd);
        p->src = none(pd.diff_src_desc(), engine_);
        p->dst = none(pd.diff_dst_desc(), engine_);
        p->args = {{DNNL_ARG_DIFF_SRC, p->src}, {DNNL_ARG_DIFF_DST, p->dst}};
        p->workspace_bytes = static_cast<int64_t>(hint.workspace_desc().get_size());
        if (p->workspace_bytes > 0) {
          p->args.emplace(DNNL_ARG_WORKSPACE, p->workspace = none(hint.workspace_desc(), engine_));
        }
        if (accumulate) p->temp.resize(w.input_size());
        scratchpad = pd.scratchpad_desc();
        break;
      }
    }
    if (scratchpad.get_size() > 0) {
      p->scratchpad = memory(scratchpad, engine_);
      p->args.emplace(DNNL_ARG_SCRATCHPAD, p->scratchpad);
    }
  } catch (const dnnl::error& e) {
    throw BackendError("oneDNN convolution/pooling " + describe(w) +
                       " could not be created: " + e.what());
  }
  return *plans_.emplace(key, std::move(p)).first->second;
}

namespace {

CpuWindowOps::Key make_key(Op op, int64_t variant, bool has_bias, bool accumulate,
                           const Window2d& w) {
  return {static_cast<int64_t>(op),
          variant,
          has_bias,
          accumulate,
          w.batch,
          w.in_h,
          w.in_w,
          w.in_c,
          w.out_h,
          w.out_w,
          w.out_c,
          w.kernel_h,
          w.kernel_w,
          w.stride_h,
          w.stride_w,
          w.dilation_h,
          w.dilation_w,
          w.pad_top,
          w.pad_bottom,
          w.pad_left,
          w.pad_right};
}

void execute(dnnl::primitive& primitive, dnnl::stream& stream,
             const std::unordered_map<int, memory>& args, const Window2d& w) {
  execute_primitive(primitive, stream, args, [&] { return "convolution/pooling " + describe(w); });
}

}  // namespace

void CpuWindowOps::conv2d_forward(const Window2d& w, const float* x, const float* kernel,
                                  const float* bias, ActivationKind activation, float* y) {
  if (activation == ActivationKind::softmax) {
    throw BackendError("conv2d_forward: softmax is not an epilogue; apply activation_forward");
  }
  if (w.output_size() == 0) return;
  Plan& p = plan(
      make_key(Op::conv_forward, static_cast<int64_t>(activation), bias != nullptr, false, w), w);
  omp_set_num_threads(threads_);
  p.src.set_data_handle(const_cast<float*>(x));
  p.dst.set_data_handle(y);
  p.weights_user.set_data_handle(const_cast<float*>(kernel));
  if (bias) p.bias.set_data_handle(const_cast<float*>(bias));
  if (p.reorders_weights) p.weights_reorder.execute(stream_, p.weights_user, p.weights_internal);
  execute(p.primitive, stream_, p.args, w);
}

void CpuWindowOps::conv2d_backward_data(const Window2d& w, const float* dy, const float* kernel,
                                        float* dx, bool accumulate) {
  if (w.input_size() == 0) return;
  Plan& p = plan(make_key(Op::conv_backward_data, 0, false, accumulate, w), w);
  omp_set_num_threads(threads_);
  p.dst.set_data_handle(const_cast<float*>(dy));
  p.src.set_data_handle(accumulate ? p.temp.data() : dx);
  p.weights_user.set_data_handle(const_cast<float*>(kernel));
  if (p.reorders_weights) p.weights_reorder.execute(stream_, p.weights_user, p.weights_internal);
  execute(p.primitive, stream_, p.args, w);
  if (accumulate) add_into(dx, p.temp.data(), w.input_size(), threads_);
}

void CpuWindowOps::conv2d_backward_weights(const Window2d& w, const float* x, const float* dy,
                                           float* dkernel, float* dbias, bool accumulate) {
  const int64_t kernel_size = w.kernel_h * w.kernel_w * w.in_c * w.out_c;
  if (kernel_size == 0) return;
  Plan& p = plan(make_key(Op::conv_backward_weights, 0, dbias != nullptr, accumulate, w), w);
  omp_set_num_threads(threads_);
  p.src.set_data_handle(const_cast<float*>(x));
  p.dst.set_data_handle(const_cast<float*>(dy));
  p.weights_user.set_data_handle(accumulate ? p.temp.data() : dkernel);
  if (dbias) p.bias.set_data_handle(accumulate ? p.temp_bias.data() : dbias);
  execute(p.primitive, stream_, p.args, w);
  if (p.reorders_weights) p.weights_reorder.execute(stream_, p.weights_internal, p.weights_user);
  stream_.wait();
  if (accumulate) {
    add_into(dkernel, p.temp.data(), kernel_size, threads_);
    if (dbias) add_into(dbias, p.temp_bias.data(), w.out_c, threads_);
  }
}

void CpuWindowOps::pool2d_forward(PoolKind kind, const Window2d& w, const float* x, float* y,
                                  void* workspace) {
  if (w.output_size() == 0) return;
  const bool training = workspace != nullptr;
  if (training && kind == PoolKind::max && hand_max_pool(w)) {
    max_pool_train_forward(w, x, y, static_cast<int32_t*>(workspace), threads_);
    return;
  }
  Plan& p = plan(make_key(training ? Op::pool_train : Op::pool_infer, static_cast<int64_t>(kind),
                          false, false, w),
                 w);
  omp_set_num_threads(threads_);
  p.src.set_data_handle(const_cast<float*>(x));
  p.dst.set_data_handle(y);
  if (p.workspace_bytes > 0) p.workspace.set_data_handle(workspace);
  execute(p.primitive, stream_, p.args, w);
}

void CpuWindowOps::pool2d_backward(PoolKind kind, const Window2d& w, const float* dy,
                                   const void* workspace, float* dx, bool accumulate) {
  if (w.input_size() == 0) return;
  if (kind == PoolKind::max && !workspace) {
    throw BackendError("pool2d_backward: max pooling " + describe(w) +
                       " needs the workspace its training forward wrote");
  }
  if (kind == PoolKind::max && hand_max_pool(w)) {
    max_pool_backward(w, dy, static_cast<const int32_t*>(workspace), dx, accumulate, threads_);
    return;
  }
  Plan& p = plan(make_key(Op::pool_backward, static_cast<int64_t>(kind), false, accumulate, w), w);
  omp_set_num_threads(threads_);
  p.dst.set_data_handle(const_cast<float*>(dy));
  p.src.set_data_handle(accumulate ? p.temp.data() : dx);
  if (p.workspace_bytes > 0) p.workspace.set_data_handle(const_cast<void*>(workspace));
  execute(p.primitive, stream_, p.args, w);
  if (accumulate) add_into(dx, p.temp.data(), w.input_size(), threads_);
}

}  // namespace tandem::detail
