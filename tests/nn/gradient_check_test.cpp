// f64 finite-difference gradient checks for every layer, activation and loss.
//
// Each case builds a small model with the public API and, beside it, an f64 reference of the
// same graph (nn/reference_net.h). tandem computes the gradient of the mean loss as a training
// step does (executor forward, Loss::compute into output_grad() with grad_scale 1/batch,
// fused iff the loss fuses with the output activation, executor backward -- the same calls
// as parallel/single_device.cpp). The reference differentiates numerically: central
// differences, h = 1e-6, in f64, at the very float32 parameters tandem used.
//
// Input gradients: the executor gives the model input no gradient, so an InputProbe
// (y = x + delta, delta = 0) sits first; d loss/d delta is then d loss/dx, written by the
// first real layer's backward. Every case also runs without the probe.
//
// Tolerances (tandem is float32, the reference f64):
//   gradients  |analytic - numeric| <= 1e-3 * max(|numeric|, 1e-3)
//   forward    |tandem - reference| <= 1e-5 * max(|reference|, 1) per output value
//   loss       |tandem - reference| <= 1e-5 * max(|reference|, 1)
// The self-test below shows the gradient tolerance catches a 1% error in any one entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "core/rng.h"
#include "model/executor.h"
#include "model/model_state.h"
#include "nn/loss.h"
#include "nn/reference_net.h"
#include "tandem/model.h"

namespace tandem::test {
namespace {

constexpr double kGradTol = 1e-3;
constexpr double kGradFloor = 1e-3;
constexpr double kForwardTol = 1e-5;
constexpr double kStep = 1e-6;
// Base-point distance from a relu kink or a clip bound: far above what kStep or float32
// rounding can cross, so both sides of every difference see the same branch.
constexpr double kMinMargin = 1e-4;

struct Case {
  std::string name;
  Shape input_shape;
  std::string loss;
  std::function<int(TwinNet&)> build;  // returns the output node
  bool training = true;
  // Normalizes with batch statistics: a batch of 1 sample would make every input gradient
  // zero (each value is its own mean), so such cases use 2 samples instead.
  bool batch_statistics = false;
};

// The gradient of one case, entry by entry, with where each entry belongs.
struct GradCheck {
  std::vector<double> analytic;     // tandem
  std::vector<double> numeric;      // central differences of the f64 reference
  std::vector<std::string> labels;  // "dense_1/kernel[3]", "x[5]"
  std::vector<std::pair<std::string, std::pair<size_t, size_t>>> tensors;  // name, [begin, end)
  double forward_error = 0, loss_error = 0;
  // Largest relative error of the batch statistics BatchNormalization writes into its
  // moving statistics' slots (they hold the statistic, not a gradient); -1: none.
  double stat_error = -1;
  double relu_margin = 0, prob_margin = 0;
  double loss = 0;
};

struct Verdict {
  bool ok = true;
  double max_error = 0;
  size_t worst = 0;
};

Verdict compare(const std::vector<double>& analytic, const std::vector<double>& numeric) {
  Verdict v;
  for (size_t i = 0; i < numeric.size(); ++i) {
    const double e =
        std::abs(analytic[i] - numeric[i]) / std::max(std::abs(numeric[i]), kGradFloor);
    if (e > v.max_error) v.max_error = e, v.worst = i;
  }
  v.ok = v.max_error <= kGradTol;
  return v;
}

double uniform(Rng& rng, double lo, double hi) {
  return lo + (hi - lo) * rng.uniform_double();
}

// Targets for the loss: soft labels (rows sum to 1) for CCE, class ids for sparse, values in
// [0, 1] for BCE, in [-1, 1] for MSE.
std::vector<float> make_targets(detail::LossKind kind, int64_t batch, int64_t out_size,
                                int64_t classes, Rng& rng) {
  using detail::LossKind;
  const int64_t rows = batch * out_size / classes;
  std::vector<float> y;
  switch (kind) {
    case LossKind::categorical_crossentropy:
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> row(classes);
        float sum = 0;
        for (float& v : row) sum += v = static_cast<float>(uniform(rng, 0.05, 1.0));
        for (float v : row) y.push_back(v / sum);
      }
      break;
    case LossKind::sparse_categorical_crossentropy:
      for (int64_t r = 0; r < rows; ++r) y.push_back(static_cast<float>(rng.below(classes)));
      break;
    case LossKind::binary_crossentropy:
      for (int64_t i = 0; i < rows * classes; ++i) y.push_back(rng.uniform());
      break;
    case LossKind::mean_squared_error:
      for (int64_t i = 0; i < rows * classes; ++i) {
        y.push_back(static_cast<float>(uniform(rng, -1, 1)));
      }
      break;
  }
  return y;
}

const RefLayer* owner(const TwinNet& net, const detail::Graph& g, const detail::ParamEntry& e) {
  for (const RefLayer& l : net.layers()) {
    if (l.impl == g.layers()[e.layer_index].layer) return &l;
  }
  return nullptr;
}

// Builds the case, runs tandem's training-step gradient and differences the f64 reference.
GradCheck run_case(const Case& c, int64_t batch, bool probe, uint64_t seed) {
  TwinNet net(c.input_shape, probe ? batch : 0);
  const int out = c.build(net);
  Model model(net.input_node(), net.node(out).node, c.name);
  detail::ModelState& s = model.state();
  const detail::Graph& g = *s.graph;
  net.bind(g);

  // Kernels ~ U(-a, a), a = sqrt(3 / fan_in); biases ~ U(-0.5, 0.5) + shift; probe 0.
  Rng rng(seed);
  std::vector<Tensor> weights = model.get_weights();
  for (size_t i = 0; i < g.params().size(); ++i) {
    const detail::ParamEntry& e = g.params()[i];
    const RefLayer* l = owner(net, g, e);
    for (float& v : weights[i].values()) {
      if (l->op == RefOp::probe) {
        v = 0;
      } else if (e.spec.name == "gamma" || e.spec.name == "moving_variance") {
        v = static_cast<float>(uniform(rng, 0.5, 1.5));
      } else if (e.spec.name == "kernel") {
        const double a = std::sqrt(3.0 / static_cast<double>(e.spec.fan_in));
        v = static_cast<float>(uniform(rng, -a, a));
      } else {
        v = static_cast<float>(uniform(rng, -0.5, 0.5) + l->bias_shift);
      }
    }
  }
  model.set_weights(weights);

  const int64_t in_size = g.input().size, out_size = g.output().size, classes = s.classes();
  std::vector<float> x(batch * in_size);
  for (float& v : x) v = static_cast<float>(uniform(rng, -1, 1));
  const detail::Loss loss(detail::parse_loss(c.loss));
  const std::vector<float> target = make_targets(loss.kind(), batch, out_size, classes, rng);

  // tandem: one training step's forward, loss and backward.
  auto backend = make_cpu_backend(1);
  detail::Executor executor(g, *backend);
  executor.reserve(batch);
  const float* y = executor.forward(x.data(), batch, s.params.data(), c.training, seed + 1);
  const std::vector<float> output(y, y + batch * out_size);
  const bool fused = loss.fuses_with(executor.output_activation());
  const double loss_sum =
      loss.compute(output.data(), target.data(), batch, out_size, classes, executor.output_grad(),
                   1.f / static_cast<float>(batch), fused);
  AlignedBuffer grads(g.param_buffer_size());
  executor.backward(s.params.data(), grads.data(), fused, 1.f / static_cast<float>(batch));

  // The f64 reference at the same parameters.
  std::vector<double> params(s.params.data(), s.params.data() + g.param_buffer_size());
  std::vector<double> x64(x.begin(), x.end());
  const std::vector<double> target64(target.begin(), target.end());
  GradCheck r;
  r.prob_margin = std::numeric_limits<double>::infinity();
  const RefForward f = net.forward(params, x64, batch, out, c.training);
  r.relu_margin = f.relu_margin;
  r.loss = reference_loss(loss.kind(), f, out, target64, batch, classes, r.prob_margin);
  for (int64_t i = 0; i < batch * out_size; ++i) {
    const double ref = f.values[out][i];
    r.forward_error =
        std::max(r.forward_error, std::abs(output[i] - ref) / std::max(std::abs(ref), 1.0));
  }
  r.loss_error =
      std::abs(loss_sum / static_cast<double>(batch) - r.loss) / std::max(std::abs(r.loss), 1.0);

  const auto loss_at = [&] {
    double margin = std::numeric_limits<double>::infinity();  // checked at the base point only
    return reference_loss(loss.kind(), net.forward(params, x64, batch, out, c.training), out,
                          target64, batch, classes, margin);
  };
  const auto difference = [&](double& v) {
    const double saved = v;
    v = saved + kStep;
    const double plus = loss_at();
    v = saved - kStep;
    const double minus = loss_at();
    v = saved;
    return (plus - minus) / (2 * kStep);
  };
  const auto begin_tensor = [&](const std::string& name) {
    r.tensors.push_back({name, {r.numeric.size(), r.numeric.size()}});
  };
  if (c.training) {
    for (const auto& [offset, stats] : f.batch_stats) {
      r.stat_error = std::max(r.stat_error, 0.0);
      for (size_t i = 0; i < stats.size(); ++i) {
        r.stat_error = std::max(r.stat_error, std::abs(grads.data()[offset + i] - stats[i]) /
                                                  std::max(std::abs(stats[i]), 1e-3));
      }
    }
  }
  for (const detail::ParamEntry& e : g.params()) {
    const RefLayer* l = owner(net, g, e);
    if (l->op == RefOp::probe || !e.spec.trainable) continue;
    const std::string name = g.layers()[e.layer_index].layer->name + "/" + e.spec.name;
    begin_tensor(name);
    for (int64_t i = 0; i < e.size; ++i) {
      r.analytic.push_back(grads.data()[e.offset + i]);
      r.numeric.push_back(difference(params[e.offset + i]));
      r.labels.push_back(name + "[" + std::to_string(i) + "]");
    }
    r.tensors.back().second.second = r.numeric.size();
  }
  if (net.has_probe()) {
    begin_tensor("x");
    for (int64_t i = 0; i < batch * in_size; ++i) {
      r.analytic.push_back(grads.data()[net.probe().kernel_offset + i]);
      r.numeric.push_back(difference(x64[i]));
      r.labels.push_back("x[" + std::to_string(i) + "]");
    }
    r.tensors.back().second.second = r.numeric.size();
  }
  return r;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"dense_linear_mse",
       {5},
       "mse",
       [](TwinNet& n) { return n.call(n.dense(4, "linear"), n.x()); }},
      {"dense_relu_mse",
       {5},
       "mse",
       [](TwinNet& n) { return n.call(n.dense(3, "linear"), n.call(n.dense(6, "relu"), n.x())); }},
      {"dense_sigmoid_mse",
       {5},
       "mse",
       [](TwinNet& n) {
         return n.call(n.dense(3, "linear"), n.call(n.dense(4, "sigmoid"), n.x()));
       }},
      {"dense_tanh_output_mse",
       {5},
       "mean_squared_error",
       [](TwinNet& n) { return n.call(n.dense(3, "tanh"), n.x()); }},
      {"dense_softmax_cce_fused",
       {5},
       "categorical_crossentropy",
       [](TwinNet& n) { return n.call(n.dense(4, "softmax"), n.call(n.dense(6, "tanh"), n.x())); }},
      {"activation_softmax_cce_fused",
       {5},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.dense(6, "relu"), n.x());
         return n.call(n.activation("softmax"), n.call(n.dense(4, "linear"), h));
       }},
      {"sigmoid_output_cce_unfused",
       {5},
       "categorical_crossentropy",
       [](TwinNet& n) { return n.call(n.dense(4, "sigmoid"), n.x()); }},
      // tanh bounds the hidden values to (-1, 1), so the +4 bias keeps every output positive.
      {"linear_positive_output_cce_unfused",
       {5},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.dense(3, "tanh"), n.x());
         return n.call(n.dense(4, "linear", true, 4.0), h);
       }},
      {"sigmoid_bce_fused",
       {5},
       "binary_crossentropy",
       [](TwinNet& n) { return n.call(n.dense(3, "sigmoid"), n.call(n.dense(5, "relu"), n.x())); }},
      {"activation_sigmoid_bce_fused",
       {5},
       "binary_crossentropy",
       [](TwinNet& n) {
         return n.call(n.activation("sigmoid"), n.call(n.dense(3, "linear"), n.x()));
       }},
      {"softmax_output_bce_unfused",
       {5},
       "binary_crossentropy",
       [](TwinNet& n) { return n.call(n.dense(3, "softmax"), n.x()); }},
      {"softmax_sparse_cce_fused",
       {5},
       "sparse_categorical_crossentropy",
       [](TwinNet& n) { return n.call(n.dense(4, "softmax"), n.call(n.dense(5, "tanh"), n.x())); }},
      {"sigmoid_output_sparse_cce_unfused",
       {5},
       "sparse_categorical_crossentropy",
       [](TwinNet& n) { return n.call(n.dense(4, "sigmoid"), n.x()); }},
      {"activation_layers_mse",
       {4},
       "mse",
       [](TwinNet& n) {
         int h = n.call(n.activation("relu"), n.call(n.dense(5, "linear"), n.x()));
         h = n.call(n.activation("sigmoid"), n.call(n.dense(4, "linear"), h));
         h = n.call(n.activation("tanh"), n.call(n.dense(4, "linear"), h));
         h = n.call(n.activation("linear"), h);
         return n.call(n.dense(2, "linear"), h);
       }},
      // Dense on the last axis of (3, 4), then Flatten (15) into a softmax head.
      {"rank3_dense_flatten_cce",
       {3, 4},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.flatten(), n.call(n.dense(5, "tanh"), n.x()));
         return n.call(n.dense(3, "softmax"), h);
       }},
      // Output (2, 3): the loss takes each of the 2 rows and averages them per sample.
      {"rank3_output_cce",
       {2, 4},
       "categorical_crossentropy",
       [](TwinNet& n) { return n.call(n.dense(3, "softmax"), n.x()); }},
      {"rank3_output_sparse_cce",
       {2, 4},
       "sparse_categorical_crossentropy",
       [](TwinNet& n) { return n.call(n.dense(3, "softmax"), n.x()); }},
      // x feeds two layers; a feeds Add and Concatenate, so gradients accumulate in both.
      {"branch_add_concat",
       {4},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int a = n.call(n.dense(5, "tanh"), n.x());
         const int b = n.call(n.dense(5, "relu"), n.x());
         const int sum = n.call(n.add(), {a, b});
         const int joined = n.call(n.concatenate(-1), {sum, a});
         return n.call(n.dense(3, "softmax"), joined);
       }},
      // Concatenate along per-sample axis 0 of (3, 4) (not the last axis; uneven parts), then
      // along the last axis with uneven widths.
      {"concat_inner_axis",
       {3, 2},
       "mse",
       [](TwinNet& n) {
         const int a = n.call(n.dense(4, "tanh"), n.x());
         const int b = n.call(n.dense(4, "linear"), n.x());
         const int ab = n.call(n.concatenate(0), {a, b});          // (6, 4)
         const int aba = n.call(n.concatenate(0), {ab, a});        // (9, 4)
         const int side = n.call(n.dense(2, "sigmoid"), aba);      // (9, 2)
         const int wide = n.call(n.concatenate(-1), {aba, side});  // (9, 6)
         return n.call(n.dense(3, "linear"), n.call(n.flatten(), wide));
       }},
      // Concatenate along the middle axis of a (2, 3, 4) per-sample shape: outer and inner
      // blocks are both > 1.
      {"concat_middle_axis_rank4",
       {2, 3, 2},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int a = n.call(n.dense(4, "tanh"), n.x());     // (2, 3, 4)
         const int b = n.call(n.dense(4, "sigmoid"), n.x());  // (2, 3, 4)
         const int ab = n.call(n.concatenate(1), {a, b});     // (2, 6, 4)
         return n.call(n.dense(3, "softmax"), n.call(n.flatten(), ab));
       }},
      // One Dense called twice in a chain: its gradients from both calls add.
      {"shared_dense_chain",
       {4},
       "mse",
       [](TwinNet& n) {
         const int shared = n.dense(4, "tanh");
         const int twice = n.call(shared, n.call(shared, n.x()));
         return n.call(n.dense(2, "linear"), twice);
       }},
      {"shared_dense_branches",
       {4},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int shared = n.dense(4, "sigmoid");
         const int a = n.call(shared, n.x());
         const int b = n.call(shared, n.call(n.dense(4, "tanh"), n.x()));
         return n.call(n.dense(3, "softmax"), n.call(n.add(), {a, b}));
       }},
      {"dropout_rate0_training",
       {5},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.dropout(0.0), n.call(n.dense(6, "relu"), n.x()));
         return n.call(n.dense(3, "softmax"), h);
       }},
      // Convolutions: odd sizes, a non-square kernel, strides with "same" (asymmetric
      // padding), dilation, no bias, an even kernel with "same".
      {"conv2d_valid_relu",
       {5, 6, 2},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.conv2d(4, {3, 2}, "relu"), n.x());  // (3, 5, 4)
         return n.call(n.dense(3, "softmax"), n.call(n.flatten(), h));
       }},
      {"conv2d_same_strided_tanh",
       {7, 5, 3},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.conv2d(4, 3, "tanh", 2, "same"), n.x());  // (4, 3, 4)
         return n.call(n.dense(2, "linear"), n.call(n.flatten(), h));
       }},
      {"conv2d_dilated_no_bias",
       {7, 6, 2},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.conv2d(3, {2, 3}, "linear", 1, "valid", {2, 1}, false), n.x());
         return n.call(n.dense(2, "linear"), n.call(n.flatten(), h));  // h (5, 4, 3)
       }},
      {"conv2d_even_kernel_same_sigmoid",
       {5, 4, 2},
       "binary_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.conv2d(2, 4, "sigmoid", 1, "same"), n.x());  // (5, 4, 2)
         return n.call(n.dense(3, "sigmoid"), n.call(n.flatten(), h));
       }},
      {"conv2d_dilated_same",
       {6, 6, 1},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.conv2d(2, 3, "tanh", 1, "same", 2), n.x());  // (6, 6, 2)
         return n.call(n.dense(2, "linear"), n.call(n.flatten(), h));
       }},
      // A per-pixel softmax head: Conv2D(softmax) on the channels, fused with the loss.
      {"conv2d_softmax_output_cce",
       {3, 4, 2},
       "categorical_crossentropy",
       [](TwinNet& n) { return n.call(n.conv2d(3, 1, "softmax"), n.x()); }},
      {"max_pool_valid_odd",
       {5, 7, 2},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.conv2d(3, 1, "tanh"), n.x());  // (5, 7, 3)
         const int p = n.call(n.pool(true, 2), h);             // (2, 3, 3)
         return n.call(n.dense(3, "softmax"), n.call(n.flatten(), p));
       }},
      {"max_pool_same_strided",
       {6, 5, 2},
       "mse",
       [](TwinNet& n) {
         const int p = n.call(n.pool(true, 3, Size2(2, 1), "same"), n.x());  // (3, 5, 2)
         return n.call(n.dense(2, "linear"), n.call(n.flatten(), p));
       }},
      {"average_pool_same_strided",
       {5, 6, 2},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.conv2d(2, 2, "tanh", 1, "same"), n.x());
         const int p = n.call(n.pool(false, 3, 2, "same"), h);  // (3, 3, 2)
         return n.call(n.dense(2, "linear"), n.call(n.flatten(), p));
       }},
      {"average_pool_valid",
       {4, 5, 3},
       "mse",
       [](TwinNet& n) {
         const int p = n.call(n.pool(false, {2, 3}), n.x());  // (2, 1, 3)
         return n.call(n.dense(2, "tanh"), n.call(n.flatten(), p));
       }},
      {"global_average_pool",
       {3, 5, 2},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.conv2d(4, 3, "relu", 1, "same"), n.x());
         return n.call(n.dense(3, "softmax"), n.call(n.global_average_pool(), h));
       }},
      {"zero_padding_then_conv",
       {3, 4, 2},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.zero_padding(Padding2D(1, 2, 0, 1)), n.x());  // (6, 5, 2)
         const int c = n.call(n.conv2d(2, 3, "tanh"), h);                     // (4, 3, 2)
         return n.call(n.dense(2, "linear"), n.call(n.flatten(), c));
       }},
      {"reshape_flat_to_image",
       {24},
       "mse",
       [](TwinNet& n) {
         const int img = n.call(n.reshape({4, -1, 2}), n.x());  // (4, 3, 2)
         const int c = n.call(n.conv2d(3, 2, "tanh"), img);     // (3, 2, 3)
         return n.call(n.dense(2, "linear"), n.call(n.reshape({-1}), c));
       }},
      // Branches on 4-D tensors: Add, Concatenate on channels, and one Conv2D called twice
      // (its kernel's gradients and x's add up).
      {"conv_branches_add_concat_shared",
       {4, 4, 2},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int shared = n.conv2d(2, 3, "tanh", 1, "same");
         const int a = n.call(shared, n.x());                       // (4, 4, 2)
         const int b = n.call(n.conv2d(2, 1, "relu"), n.x());       // (4, 4, 2)
         const int sum = n.call(n.add(), {a, b});                   // (4, 4, 2)
         const int again = n.call(shared, sum);                     // (4, 4, 2)
         const int joined = n.call(n.concatenate(-1), {again, a});  // (4, 4, 4)
         const int p = n.call(n.pool(true, 2), joined);             // (2, 2, 4)
         return n.call(n.dense(3, "softmax"), n.call(n.global_average_pool(), p));
       }},
      // BatchNormalization in training (batch statistics, on a Dense output and on a conv's
      // channels), without center and scale, and in inference (moving statistics).
      {"batch_norm_dense_training",
       {5},
       "categorical_crossentropy",
       [](TwinNet& n) {
         const int h = n.call(n.batch_norm(), n.call(n.dense(6, "tanh"), n.x()));
         return n.call(n.dense(3, "softmax"), h);
       },
       true,
       true},
      {"batch_norm_conv_training",
       {4, 5, 2},
       "mse",
       [](TwinNet& n) {
         // No conv bias: BatchNormalization subtracts it again (its gradient is zero).
         const int conv = n.conv2d(3, 3, "linear", 1, "same", 1, false);
         const int h = n.call(n.batch_norm(), n.call(conv, n.x()));
         const int p = n.call(n.pool(true, 2), n.call(n.activation("tanh"), h));  // (2, 2, 3)
         return n.call(n.dense(2, "linear"), n.call(n.flatten(), p));
       },
       true,
       true},
      {"batch_norm_plain_on_input",
       {3, 2, 4},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.batch_norm(false, false, 0.01), n.x());
         return n.call(n.dense(2, "tanh"), n.call(n.flatten(), h));
       },
       true,
       true},
      // Synchronized BatchNormalization's own kernels (sums about the moving mean, the input
      // gradient from summed dy terms), on one replica.
      {"batch_norm_synchronized_training",
       {4, 5, 2},
       "mse",
       [](TwinNet& n) {
         const int conv = n.conv2d(3, 3, "linear", 1, "same", 1, false);
         const int h = n.call(n.batch_norm(true, true, 1e-3, true), n.call(conv, n.x()));
         const int p = n.call(n.pool(true, 2), n.call(n.activation("tanh"), h));  // (2, 2, 3)
         const int d = n.call(n.batch_norm(false, true, 0.1, true), n.call(n.flatten(), p));
         return n.call(n.dense(2, "linear"), d);
       },
       true,
       true},
      {"batch_norm_synchronized_on_input",
       {3, 2, 20},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.batch_norm(true, false, 1e-3, true), n.x());
         return n.call(n.dense(2, "tanh"), n.call(n.flatten(), h));
       },
       true,
       true},
      {"batch_norm_inference",
       {5},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.batch_norm(), n.call(n.dense(4, "tanh"), n.x()));
         return n.call(n.dense(2, "linear"), h);
       },
       /*training=*/false},
      {"dropout_inference",
       {5},
       "mse",
       [](TwinNet& n) {
         const int h = n.call(n.dropout(0.5), n.call(n.dense(6, "tanh"), n.x()));
         return n.call(n.dense(2, "linear"), h);
       },
       /*training=*/false},
  };
  return all;
}

struct Param {
  size_t case_index;
  int64_t batch;
  bool probe;
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (size_t i = 0; i < cases().size(); ++i) {
    out.push_back({i, cases()[i].batch_statistics ? 2 : 1, true});
    out.push_back({i, 5, true});
    out.push_back({i, 3, false});
  }
  return out;
}

class GradientCheck : public ::testing::TestWithParam<Param> {};

TEST_P(GradientCheck, MatchesF64FiniteDifferences) {
  const Param p = GetParam();
  const Case& c = cases()[p.case_index];
  const GradCheck r = run_case(c, p.batch, p.probe, 1000 + 7 * p.case_index + p.batch);
  // The checks below are only valid away from relu kinks and clip bounds.
  ASSERT_GT(r.relu_margin, kMinMargin) << "a relu input sits on its kink: change the seed";
  ASSERT_GT(r.prob_margin, kMinMargin) << "a probability is clipped: change the case";

  EXPECT_LE(r.forward_error, kForwardTol);
  // The statistics are float32 reductions of O(1) values over a few dozen rows.
  if (r.stat_error >= 0) {
    EXPECT_LE(r.stat_error, 1e-5) << "batch statistics";
  }
  EXPECT_LE(r.loss_error, kForwardTol) << "reference loss " << r.loss;
  const Verdict v = compare(r.analytic, r.numeric);
  EXPECT_TRUE(v.ok) << r.labels[v.worst] << ": tandem " << r.analytic[v.worst]
                    << ", finite difference " << r.numeric[v.worst] << ", error " << v.max_error;
  // Every tensor must take part, or its check would pass vacuously.
  for (const auto& [name, range] : r.tensors) {
    double largest = 0;
    for (size_t i = range.first; i < range.second; ++i) {
      largest = std::max(largest, std::abs(r.numeric[i]));
    }
    EXPECT_GT(largest, 1e-4) << name << " has no gradient";
  }
  std::printf("  %-36s batch %ld%s: %zu entries, grad err %.1e, forward err %.1e, loss err %.1e\n",
              c.name.c_str(), static_cast<long>(p.batch), p.probe ? " +dx" : "", r.numeric.size(),
              v.max_error, r.forward_error, r.loss_error);
}

INSTANTIATE_TEST_SUITE_P(Layers, GradientCheck, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return cases()[info.param.case_index].name + "_batch" +
                                  std::to_string(info.param.batch) +
                                  (info.param.probe ? "_with_dx" : "");
                         });

// The checker itself: a 1% error in any one entry whose true gradient is at least the floor
// must fail, as must a 1% error in the whole gradient (a wrong batch scale) and two swapped
// entries (a transposed kernel).
TEST(GradientCheckSelfTest, DetectsOnePercentErrors) {
  const auto it = std::find_if(cases().begin(), cases().end(),
                               [](const Case& c) { return c.name == "branch_add_concat"; });
  ASSERT_NE(it, cases().end());
  const GradCheck r = run_case(*it, 3, true, 42);
  ASSERT_TRUE(compare(r.analytic, r.numeric).ok);

  size_t tried = 0;
  for (size_t i = 0; i < r.numeric.size(); ++i) {
    if (std::abs(r.numeric[i]) < kGradFloor) continue;
    std::vector<double> wrong = r.analytic;
    wrong[i] *= 1.01;
    EXPECT_FALSE(compare(wrong, r.numeric).ok) << "missed a 1% error in " << r.labels[i];
    ++tried;
  }
  EXPECT_GT(tried, r.numeric.size() / 2);

  std::vector<double> scaled = r.analytic;
  for (double& g : scaled) g *= 1.01;
  EXPECT_FALSE(compare(scaled, r.numeric).ok);

  std::vector<double> swapped = r.analytic;
  const auto [lo, hi] = std::minmax_element(swapped.begin(), swapped.end());
  std::iter_swap(lo, hi);
  EXPECT_FALSE(compare(swapped, r.numeric).ok);
}

}  // namespace
}  // namespace tandem::test
