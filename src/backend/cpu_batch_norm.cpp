#include "backend/cpu_batch_norm.h"

#include <omp.h>

#include <bit>
#include <string>
#include <unordered_map>

#include "backend/dnnl_util.h"
#include "core/aligned_buffer.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

using dnnl::memory;

enum Op : int64_t { kTrain, kInfer, kBackward, kBackwardGlobalStats };

// (rows, channels) row-major, described as channels-last images of 1x1 pixels: oneDNN's
// vectorised implementation serves nhwc, while plain nc gets its slow generic one.
memory::desc data_desc(const BatchNormArgs& a) {
  return memory::desc({a.rows, a.channels, 1, 1}, memory::data_type::f32, memory::format_tag::nhwc);
}
memory::desc channel_desc(const BatchNormArgs& a) {
  return memory::desc({a.channels}, memory::data_type::f32, memory::format_tag::x);
}

dnnl::normalization_flags flags(bool gamma, bool beta, bool global_stats) {
  auto f = dnnl::normalization_flags::none;
  if (gamma) f |= dnnl::normalization_flags::use_scale;
  if (beta) f |= dnnl::normalization_flags::use_shift;
  if (global_stats) f |= dnnl::normalization_flags::use_global_stats;
  return f;
}

// training: batch statistics; global_stats: the given ones (inference, or a backward hint).
dnnl::batch_normalization_forward::primitive_desc forward_desc(const BatchNormArgs& a,
                                                               bool training, bool global_stats,
                                                               const dnnl::engine& engine) {
  const dnnl::batch_normalization_forward::desc desc(
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
      data_desc(a), a.epsilon, flags(a.gamma, a.beta, global_stats));
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return {desc, attr, engine};
}

std::string describe(const BatchNormArgs& a) {
  return "(" + std::to_string(a.rows) + ", " + std::to_string(a.channels) + ")";
}

}  // namespace

struct CpuBatchNorm::Plan {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  memory src, dst, mean, variance, gamma, beta, diff_src, diff_gamma, diff_beta, scratchpad;
  AlignedBuffer temp, temp_gamma, temp_beta;  // accumulate: written here, then added
};

CpuBatchNorm::CpuBatchNorm(dnnl::engine& engine, dnnl::stream& stream, int threads)
    : engine_(engine), stream_(stream), threads_(threads) {}
CpuBatchNorm::~CpuBatchNorm() = default;

CpuBatchNorm::Plan& CpuBatchNorm::plan(const Key& key, const BatchNormArgs& a) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  const auto none = [&](const memory::desc& d) { return memory(d, engine_, DNNL_MEMORY_NONE); };
  omp_set_num_threads(threads_);
  try {
    memory::desc scratchpad;
    p->src = none(data_desc(a));
    p->mean = none(channel_desc(a));
    p->variance = none(channel_desc(a));
    p->args = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_MEAN, p->mean}, {DNNL_ARG_VARIANCE, p->variance}};
    if (a.gamma) p->args.emplace(DNNL_ARG_SCALE, p->gamma = none(channel_desc(a)));
    if (a.beta) p->args.emplace(DNNL_ARG_SHIFT, p->beta = none(channel_desc(a)));
    if (key[0] == kBackward || key[0] == kBackwardGlobalStats) {
      const bool global_stats = key[0] == kBackwardGlobalStats;
      const auto hint = forward_desc(a, true, global_stats, engine_);
      const bool params = a.gamma || a.beta;
      const dnnl::batch_normalization_backward::desc desc(
          params ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data, data_desc(a),
          data_desc(a), a.epsilon, flags(a.gamma, a.beta, global_stats));
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const dnnl::batch_normalization_backward::primitive_desc pd(desc, attr, engine_, hint);
      p->primitive = dnnl::batch_normalization_backward(pd);
      p->args.emplace(DNNL_ARG_DIFF_DST, p->dst = none(data_desc(a)));
      p->args.emplace(DNNL_ARG_DIFF_SRC, p->diff_src = none(data_desc(a)));
      if (a.gamma) p->args.emplace(DNNL_ARG_DIFF_SCALE, p->diff_gamma = none(channel_desc(a)));
      if (a.beta) p->args.emplace(DNNL_ARG_DIFF_SHIFT, p->diff_beta = none(channel_desc(a)));
      if (key[6]) p->temp.resize(a.rows * a.channels);
      if (key[7]) {
        if (a.gamma) p->temp_gamma.resize(a.channels);
        if (a.beta) p->temp_beta.resize(a.channels);
      }
      scratchpad = pd.scratchpad_desc();
    } else {
      const auto pd = forward_desc(a, key[0] == kTrain, key[0] == kInfer, engine_);
      p->primitive = dnnl::batch_normalization_forward(pd);
      p->args.emplace(DNNL_ARG_DST, p->dst = none(data_desc(a)));
      scratchpad = pd.scratchpad_desc();
    }
    if (scratchpad.get_size() > 0) {
      p->scratchpad = memory(scratchpad, engine_);
      p->args.emplace(DNNL_ARG_SCRATCHPAD, p->scratchpad);
    }
  } catch (const dnnl::error& e) {
    throw BackendError("oneDNN batch normalization " + describe(a) +
                       " could not be created: " + e.what());
  }
  return *plans_.emplace(key, std::move(p)).first->second;
}

namespace {

CpuBatchNorm::Key make_key(Op op, const BatchNormArgs& a, bool accumulate, bool accumulate_params) {
  return {op,
          a.rows,
          a.channels,
          std::bit_cast<int32_t>(a.epsilon),
          a.gamma != nullptr,
          a.beta != nullptr,
          accumulate,
          accumulate_params};
}

void execute(dnnl::primitive& primitive, dnnl::stream& stream,
             const std::unordered_map<int, memory>& args, const BatchNormArgs& a) {
  execute_primitive(primitive, stream, args, [&] { return "batch normalization " + describe(a); });
}

}  // namespace

void CpuBatchNorm::forward(const BatchNormArgs& a, bool training, float* y) {
  if (a.rows == 0 || a.channels == 0) return;
  Plan& p = plan(make_key(training ? kTrain : kInfer, a, false, false), a);
  omp_set_num_threads(threads_);
  p.src.set_data_handle(const_cast<float*>(a.x));
  p.dst.set_data_handle(y);
  p.mean.set_data_handle(a.mean);
  p.variance.set_data_handle(a.variance);
  if (a.gamma) p.gamma.set_data_handle(const_cast<float*>(a.gamma));
  if (a.beta) p.beta.set_data_handle(const_cast<float*>(a.beta));
  execute(p.primitive, stream_, p.args, a);
}

void CpuBatchNorm::backward(const BatchNormArgs& a, bool training, const float* dy, float* dx,
                            bool accumulate, float* dgamma, float* dbeta, bool accumulate_params) {
  if (a.rows == 0 || a.channels == 0) return;
  if ((a.gamma != nullptr) != (dgamma != nullptr) || (a.beta != nullptr) != (dbeta != nullptr)) {
    throw BackendError(
        "batch_norm_backward: dgamma and dbeta must be given exactly when gamma "
        "and beta are");
  }
  Plan& p = plan(
      make_key(training ? kBackward : kBackwardGlobalStats, a, accumulate, accumulate_params), a);
  omp_set_num_threads(threads_);
  p.src.set_data_handle(const_cast<float*>(a.x));
  p.dst.set_data_handle(const_cast<float*>(dy));
  p.mean.set_data_handle(a.mean);
  p.variance.set_data_handle(a.variance);
  p.diff_src.set_data_handle(accumulate ? p.temp.data() : dx);
  if (a.gamma) {
    p.gamma.set_data_handle(const_cast<float*>(a.gamma));
    p.diff_gamma.set_data_handle(accumulate_params ? p.temp_gamma.data() : dgamma);
  }
  if (a.beta) {
    p.beta.set_data_handle(const_cast<float*>(a.beta));
    p.diff_beta.set_data_handle(accumulate_params ? p.temp_beta.data() : dbeta);
  }
  execute(p.primitive, stream_, p.args, a);
  if (accumulate) add_into(dx, p.temp.data(), a.rows * a.channels, threads_);
  if (accumulate_params) {
    if (a.gamma) add_into(dgamma, p.temp_gamma.data(), a.channels, threads_);
    if (a.beta) add_into(dbeta, p.temp_beta.data(), a.channels, threads_);
  }
}

}  // namespace tandem::detail
