#include "advise/step_gemms.h"

#include <algorithm>
#include <cmath>

#include "profile/phase_timer.h"
#include "tandem/error.h"
#include "tandem/optimizers.h"

namespace tandem::detail {

StepGemms::StepGemms(const std::vector<int64_t>& widths, int64_t rows, int replicas, int threads)
    : widths_(widths),
      replicas_(replicas),
      backend_(make_cpu_backend(threads)),
      kernel_(make_optimizer_kernel(RMSprop())) {
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    offsets_.push_back(params_);
    params_ += widths[l] * widths[l + 1] + widths[l + 1];
  }
  for (AlignedBuffer* b : {&w_, &g_, &s_}) b->resize(params_);  // zeros
  std::fill(w_.data(), w_.data() + params_, 1e-2f);
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    dx_.emplace_back(rows * widths[l]);
    for (int q = 0; q < replicas; ++q) {
      x_.emplace_back(rows * widths[l]);
      dz_.emplace_back(rows * widths[l + 1]);
      std::fill(x_.back().data(), x_.back().data() + rows * widths[l], 0.5f);
      std::fill(dz_.back().data(), dz_.back().data() + rows * widths[l + 1], 1e-3f);
    }
  }
}

StepGemms::Seconds StepGemms::whole(int64_t rows) {
  between_steps();
  Seconds out;
  for (size_t l = widths_.size() - 1; l-- > 0;) {
    if (l > 0) out.input += seconds_of([&] { input_gradient(l, rows); });
    out.weight += seconds_of([&] {
      backend_->gemm({.m = widths_[l],
                      .n = widths_[l + 1],
                      .k = rows,
                      .a = x(l, 0),
                      .trans_a = true,
                      .b = dz(l, 0),
                      .c = g_.data() + offsets_[l]});
    });
  }
  return out;
}

StepGemms::Seconds StepGemms::shard(int64_t rows, int n) {
  between_steps();
  Seconds out;
  for (size_t l = widths_.size() - 1; l-- > 0;) {
    const int64_t in = widths_[l], part = (in + n - 1) / n;
    if (l > 0) out.input += seconds_of([&] { input_gradient(l, rows); });
    out.weight += seconds_of([&] {
      for (int q = 0; q < n; ++q) {
        backend_->gemm({.m = part,
                        .n = widths_[l + 1],
                        .k = rows,
                        .a = x(l, q),
                        .trans_a = true,
                        .b = dz(l, q),
                        .c = g_.data() + offsets_[l],
                        .accumulate = q > 0,
                        .lda = in});
      }
    });
    update(offsets_[l], offsets_[l] + part * widths_[l + 1]);
  }
  return out;
}

const float* StepGemms::x(size_t layer, int replica) const {
  return x_[layer * replicas_ + replica].data();
}

const float* StepGemms::dz(size_t layer, int replica) const {
  return dz_[layer * replicas_ + replica].data();
}

// dx (rows, in) = dz (rows, units) . kernel^T
void StepGemms::input_gradient(size_t layer, int64_t rows) {
  backend_->gemm({.m = rows,
                  .n = widths_[layer],
                  .k = widths_[layer + 1],
                  .a = dz(layer, 0),
                  .b = w_.data() + offsets_[layer],
                  .trans_b = true,
                  .c = dx_[layer].data()});
}

void StepGemms::update(int64_t begin, int64_t end) {
  float* slots[] = {s_.data()};
  kernel_->update(w_.data(), g_.data(), slots, begin, end, ++iteration_, 1e-3, backend_->threads(),
                  0);
}

void StepGemms::between_steps() {
  update(0, params_);
  double sum = 0;
  for (int64_t i = 0; i < params_; i += 16) sum += w_.data()[i];
  // Read back, so that the read is not optimized away; finite unless the update went wrong.
  if (!std::isfinite(sum))
    throw Error("weight-gradient probe: the parameters became " + std::to_string(sum));
}

}  // namespace tandem::detail
