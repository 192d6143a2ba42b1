#include "advise/steps_at_once.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "parallel/buckets.h"
#include "profile/phase_timer.h"
#include "tandem/error.h"
#include "tandem/optimizers.h"

namespace tandem::detail {

namespace {

// `devices`, once the probe's arguments are checked.
int checked_devices(const std::vector<int64_t>& widths, int64_t rows, int devices) {
  if (widths.size() < 2 || devices < 1 || rows < 1 ||
      std::any_of(widths.begin(), widths.end(), [](int64_t w) { return w < 1; })) {
    throw ConfigError(fmt::format(
        "steps-at-once probe: needs a model of 1 or more layers of 1 or more units, 1 or more "
        "devices and rows; got widths {}, {} devices, {} rows",
        fmt::join(widths, "-"), devices, rows));
  }
  return devices;
}

// A fixed pattern in [-scale, scale], of both signs, so that about half of each layer's relu
// units stay open step after step (all one sign would close them all after one update); from
// `offset` on in the pattern.
void fill_pattern(float* p, int64_t n, float scale, int64_t offset = 0) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t h = static_cast<uint32_t>(i + offset) * 2654435761u;
    p[i] = scale * (static_cast<float>(h >> 16) / 32768.0f - 1.0f);
  }
}

}  // namespace

double mean_wait_for_last(const std::vector<Clock::time_point>& ends) {
  if (ends.empty()) return 0;
  const Clock::time_point last = *std::max_element(ends.begin(), ends.end());
  double wait = 0;
  for (const Clock::time_point end : ends) {
    wait += std::chrono::duration<double>(last - end).count() / static_cast<double>(ends.size());
  }
  return wait;
}

StepsAtOnce::StepsAtOnce(const std::vector<int64_t>& widths, int64_t rows, int devices, int threads)
    : widths_(widths),
      rows_(rows),
      devices_(checked_devices(widths, rows, devices)),
      group_(plan_devices(devices_, threads)),
      kernel_(make_optimizer_kernel(RMSprop())),
      each_(devices_),
      chunks_(devices_),
      sources_(devices_, std::vector<float*>(devices_)),
      copies_(devices_) {
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    offsets_.push_back(params_);
    params_ += widths[l] * widths[l + 1] + widths[l + 1];
  }
  w_.resize(params_);
  s_.resize(params_);  // zeros
  fill_pattern(w_.data(), params_, 0.05f);
  for (int d = 0; d < devices; ++d) {
    backends_.push_back(make_cpu_backend(group_.plan().threads_per_device));
    g_.emplace_back(params_);
    chunks_[d].resize(kUpdateChunk);
  }
  for (size_t l = 0; l < widths.size(); ++l) {
    for (int d = 0; d < devices; ++d) {
      const int64_t n = rows * widths[l];
      x_.emplace_back(n);
      // Each device's rows its own (a check that reads another's then differs).
      fill_pattern(x_.back().data(), n, 1.0f, 7919 * d);
      dz_.emplace_back(l > 0 ? n : 0);
      // dz of the model's output (the last l) stands for the loss's gradient.
      if (l > 0) fill_pattern(dz_.back().data(), n, 1e-3f, 7919 * d);
    }
  }
}

void StepsAtOnce::check_rows(int64_t rows) const {
  if (rows < 1 || rows > rows_) {
    throw ConfigError(fmt::format(
        "steps-at-once probe: a pass of {} rows; its buffers hold 1 to {}", rows, rows_));
  }
}

const float* StepsAtOnce::input(size_t layer, int device) const {
  return x_[layer * devices_ + device].data();
}

const float* StepsAtOnce::output_gradient(size_t layer, int device) const {
  return dz_[(layer + 1) * devices_ + device].data();
}

float* StepsAtOnce::x(size_t layer, int device) {
  return x_[layer * devices_ + device].data();
}

// dz(l): the gradient of layer l's input; dz(l + 1) that of its output.
float* StepsAtOnce::dz(size_t layer, int device) {
  return dz_[layer * devices_ + device].data();
}

// x(l + 1) (rows, units) = relu(x(l) (rows, in) . kernel (in, units) + bias); the last layer's
// without the relu.
void StepsAtOnce::forward(int device, const float* w, int64_t rows, Seconds& out) {
  Backend& backend = *backends_[device];
  out.forward += seconds_of([&] {
    for (size_t l = 0; l + 1 < widths_.size(); ++l) {
      const int64_t in = widths_[l], units = widths_[l + 1];
      backend.gemm(
          {.m = rows,
           .n = units,
           .k = in,
           .a = x(l, device),
           .b = w + offsets_[l],
           .c = x(l + 1, device),
           .bias = w + offsets_[l] + in * units,
           .activation = l + 2 < widths_.size() ? ActivationKind::relu : ActivationKind::linear});
    }
  });
}

// dz(l) (rows, in) = dz(l + 1) (rows, units) . kernel^T; none for the first layer.
void StepsAtOnce::input_gradient(int device, const float* w, size_t layer, int64_t rows,
                                 Seconds& out) {
  if (layer == 0) return;
  out.backward += seconds_of([&] {
    backends_[device]->gemm({.m = rows,
                             .n = widths_[layer],
                             .k = widths_[layer + 1],
                             .a = dz(layer + 1, device),
                             .b = w + offsets_[layer],
                             .trans_b = true,
                             .c = dz(layer, device)});
  });
}

void StepsAtOnce::update(int device, int64_t begin, int64_t end) {
  float* slots[] = {s_.data()};
  kernel_->update(w_.data(), g_[device].data(), slots, begin, end, iteration_, 1e-3,
                  backends_[device]->threads(), 0);
}

// As grad_reducer.cpp's ShardedUpdateReducer::process_shard_chunks: every device's gradients
// over the device's aligned 1/n of the parameters summed a chunk at a time into the device's
// own chunk, and the update of that chunk of the parameters from it.
void StepsAtOnce::summed_update(int device) {
  const auto [begin, end] = aligned_share(params_, devices_, device);
  std::vector<float*>& sources = sources_[device];
  float* sum = chunks_[device].data();
  for (int64_t at = begin; at < end; at += kUpdateChunk) {
    const int64_t len = std::min(end, at + kUpdateChunk) - at;
    for (int q = 0; q < devices_; ++q) sources[q] = g_[q].data() + at;
    tree_sum(sources, sum, 0, len);
    float* slots[] = {s_.data() + at};
    kernel_->update(w_.data() + at, sum, slots, 0, len, iteration_, 1e-3, 1, at);
  }
}

StepsAtOnce::Seconds StepsAtOnce::alone(int64_t rows) {
  check_rows(rows);
  Seconds out;
  for (int pass = 0; pass < 2; ++pass) {
    out = {};
    ++iteration_;
    alone_pass(rows, out);
  }
  return out;
}

// Per layer, last first: the input gradient, then the kernel's whole gradient (in, units) =
// x(l)^T (in, rows) . dz(l + 1) (rows, units) into the device's gradient buffer.
void StepsAtOnce::whole_backward(int device, const float* w, int64_t rows, Seconds& out) {
  for (size_t l = widths_.size() - 1; l-- > 0;) {
    input_gradient(device, w, l, rows, out);
    const int64_t in = widths_[l], units = widths_[l + 1];
    out.backward += seconds_of([&] {
      backends_[device]->gemm({.m = in,
                               .n = units,
                               .k = rows,
                               .a = x(l, device),
                               .trans_a = true,
                               .b = dz(l + 1, device),
                               .c = g_[device].data() + offsets_[l]});
    });
  }
}

void StepsAtOnce::alone_pass(int64_t rows, Seconds& out) {
  group_.run([&](int d) {
    if (d != 0) return;
    forward(0, w_.data(), rows, out);
    whole_backward(0, w_.data(), rows, out);
    update(0, 0, params_);
  });
}

StepsAtOnce::Seconds StepsAtOnce::shared(int64_t rows) {
  check_rows(rows);
  for (int pass = 0; pass < 2; ++pass) {
    ++iteration_;
    std::fill(each_.begin(), each_.end(), Seconds{});
    shared_pass(rows);
  }
  return devices_mean(1);
}

StepsAtOnce::Seconds StepsAtOnce::micro_shards(int64_t rows, int local) {
  check_rows(rows);
  if (local < 1 || local > 64) {
    throw ConfigError(
        fmt::format("steps-at-once probe: {} micro-shards per device; it times 1 to 64", local));
  }
  aside_.resize(devices_);
  for (auto& mine : aside_) {
    while (static_cast<int>(mine.size()) < local) mine.emplace_back(params_);
  }
  for (auto& copies : copies_) copies.resize(local);
  for (int pass = 0; pass < 2; ++pass) {
    ++iteration_;
    std::fill(each_.begin(), each_.end(), Seconds{});
    micro_pass(rows, local);
  }
  return devices_mean(local);
}

// each_'s mean over the devices, per one of `per` passes; the shared parameters read back
// (check_finite).
StepsAtOnce::Seconds StepsAtOnce::devices_mean(int per) const {
  const double n = static_cast<double>(devices_) * per;
  Seconds mean;
  for (const Seconds& s : each_) {
    mean.forward += s.forward / n;
    mean.backward += s.backward / n;
  }
  check_finite(w_, "the parameters");
  return mean;
}

// Finite unless an update went wrong.
void StepsAtOnce::check_finite(const AlignedBuffer& w, const std::string& what) const {
  double sum = 0;
  for (int64_t i = 0; i < params_; i += 16) sum += w.data()[i];
  if (!std::isfinite(sum)) {
    throw NumericError("steps-at-once probe: " + what + " became " + std::to_string(sum));
  }
}

StepsAtOnce::Seconds StepsAtOnce::own(int64_t rows) {
  check_rows(rows);
  if (own_w_.empty()) {
    for (int d = 0; d < devices_; ++d) {
      own_w_.emplace_back(params_);
      own_s_.emplace_back(params_);  // zeros
      std::copy(w_.data(), w_.data() + params_, own_w_.back().data());
    }
    ends_.resize(devices_);
    exchanged_.resize(devices_);
    // As mirrored.cpp builds them for the all-reduce reducer.
    if (devices_ > 1) comms_ = make_shared_memory_communicators(devices_, &group_.barrier());
  }
  own_passes_.clear();
  for (int pass = 0; pass <= kOwnTimedPasses; ++pass) {
    ++iteration_;
    std::fill(each_.begin(), each_.end(), Seconds{});
    own_pass(rows);
    if (pass == 0) continue;  // the untimed one
    Seconds one = devices_mean(1);
    one.wait = mean_wait_for_last(ends_);
    for (int d = 0; d < devices_; ++d) {
      one.exchange += std::chrono::duration<double>(exchanged_[d] - ends_[d]).count() / devices_;
    }
    own_passes_.push_back(one);
  }
  for (int d = 0; d < devices_; ++d) {
    check_finite(own_w_[d], "device " + std::to_string(d) + "'s own parameters");
  }
  return mean_of(own_passes_);
}

StepsAtOnce::Seconds StepsAtOnce::mean_of(const std::vector<Seconds>& passes) {
  Seconds mean;
  const double n = static_cast<double>(passes.size());
  for (const Seconds& p : passes) {
    mean.forward += p.forward / n;
    mean.backward += p.backward / n;
    mean.wait += p.wait / n;
    mean.exchange += p.exchange / n;
  }
  return mean;
}

void StepsAtOnce::own_pass(int64_t rows) {
  group_.run([&](int d) {
    // The last step's update of the device's whole copy from its gradient buffer (untimed):
    // the devices' sum after an own pass, what another pass left before the first.
    float* slots[] = {own_s_[d].data()};
    kernel_->update(own_w_[d].data(), g_[d].data(), slots, 0, params_, iteration_, 1e-3,
                    backends_[d]->threads(), 0);
    const float* w = own_w_[d].data();
    forward(d, w, rows, each_[d]);
    whole_backward(d, w, rows, each_[d]);
    ends_[d] = Clock::now();
    // The whole buffer as one bucket, as AllreduceReducer's finalize posts the last (one
    // process's all-reduce: grad_reducer.cpp over shared_memory_communicator.cpp).
    if (devices_ == 1) {
      exchanged_[d] = ends_[d];  // nothing to all-reduce
      return;
    }
    comms_[d]->wait(comms_[d]->allreduce_async(g_[d].data(), params_));
    exchanged_[d] = Clock::now();
  });
}

void StepsAtOnce::summed_updates() {
  ++iteration_;
  group_.run([&](int d) { summed_update(d); });
}

void StepsAtOnce::micro_pass(int64_t rows, int local) {
  group_.run([&](int d) {
    summed_update(d);
    group_.barrier().wait();  // every device's shard of the parameters updated
    Seconds& out = each_[d];
    std::vector<float*>& copies = copies_[d];  // local of them (micro_shards)
    for (int j = 0; j < local; ++j) {
      forward(d, w_.data(), rows, out);
      whole_backward(d, w_.data(), rows, out);
      copies[j] = aside_[d][j].data();
      std::copy(g_[d].data(), g_[d].data() + params_, copies[j]);
    }
    // The copies summed back into the gradient buffer, which the next pass's update reads
    // on every device (untimed, as mirrored.cpp's deterministic_gradients books it apart).
    tree_sum(copies, g_[d].data(), 0, params_);
  });
}

void StepsAtOnce::shared_pass(int64_t rows) {
  const int n = devices_;
  group_.run([&](int d) {
    Seconds& out = each_[d];
    forward(d, w_.data(), rows, out);
    for (size_t l = widths_.size() - 1; l-- > 0;) {
      input_gradient(d, w_.data(), l, rows, out);
      group_.barrier().wait();  // every device's operands of the layer are there
      const int64_t in = widths_[l], units = widths_[l + 1];
      const int64_t per = (in + n - 1) / n;
      const int64_t i0 = std::min(in, per * d), i1 = std::min(in, i0 + per);
      float* kernel_grad = g_[d].data() + offsets_[l];
      if (i0 < i1) {
        out.backward += seconds_of([&] {
          for (int q = 0; q < n; ++q) {
            // rows [i0, i1) of x_q^T (in, rows) . dz_q (rows, units)
            backends_[d]->gemm({.m = i1 - i0,
                                .n = units,
                                .k = rows,
                                .a = x(l, q) + i0,
                                .trans_a = true,
                                .b = dz(l + 1, q),
                                .c = kernel_grad + i0 * units,
                                .accumulate = q > 0,
                                .lda = in});
          }
        });
        update(d, offsets_[l] + i0 * units, offsets_[l] + i1 * units);
      }
      if (d == 0) update(d, offsets_[l] + in * units, offsets_[l] + in * units + units);
    }
  });
}

}  // namespace tandem::detail
