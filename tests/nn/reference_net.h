// TwinNet: builds a small tandem graph through the public API and, beside it, an independent
// float64 reference of the same graph (forward and the four Keras losses), so the gradient
// check can difference the reference in f64 while tandem computes in float32.
//
// The reference shares no code with src/nn: it reads tandem's parameters only through the
// flat-buffer layout (Graph::params(): offset of each layer's kernel and bias).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.h"
#include "nn/layer.h"
#include "nn/loss.h"
#include "tandem/error.h"
#include "tandem/layers.h"

namespace tandem::test {

// InputProbe: y = x + delta, delta (batch, ...) a parameter that starts at zero, so
// d loss / d delta = d loss / dx. The executor gives the model's input no gradient; putting
// this layer first makes the first real layer compute its input gradient into delta's.
class InputProbe final : public detail::LayerImpl {
 public:
  explicit InputProbe(int64_t batch) : batch_(batch) {}
  std::string type() const override { return "InputProbe"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override { return inputs.at(0); }
  std::vector<detail::ParamSpec> param_specs(const std::vector<Shape>& inputs) const override {
    Shape shape = inputs.at(0);
    shape.insert(shape.begin(), batch_);
    return {{"delta", shape, Initializer("zeros"), 1, 1}};
  }
  void forward(const detail::ForwardArgs& a) override {
    if (a.batch != batch_) throw ConfigError("InputProbe: built for another batch size");
    const int64_t n = a.batch * a.output_size;
    for (int64_t i = 0; i < n; ++i) a.output[i] = a.inputs[0][i] + a.params[i];
  }
  void backward(const detail::BackwardArgs& b) override {
    const int64_t n = b.forward.batch * b.forward.output_size;
    detail::write_or_add(b.grads, b.grad_output, n, b.accumulate_param_grads);
    if (b.grad_inputs[0].data) {
      detail::write_or_add(b.grad_inputs[0].data, b.grad_output, n, b.grad_inputs[0].accumulate);
    }
  }
  nlohmann::json config() const override { return {{"name", name}}; }

 private:
  int64_t batch_;
};

enum class RefOp {
  input,
  probe,
  dense,
  activation,
  flatten,
  add,
  concatenate,
  dropout,
  conv2d,
  max_pool,
  average_pool,
  global_average_pool,
  zero_padding,
  reshape,
  batch_norm
};

struct RefLayer {
  RefOp op = RefOp::input;
  ActivationKind activation = ActivationKind::linear;
  int64_t units = 0;
  bool use_bias = true;
  int axis = -1;
  double rate = 0;
  double bias_shift = 0;  // added to the random bias draw (keeps an output positive)
  // Conv2D and pooling windows; same_padding: Keras's "same", else "valid".
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  bool same_padding = false;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;  // ZeroPadding2D
  Shape target;                                                      // Reshape
  double epsilon = 1e-3;                                             // BatchNormalization
  bool center = true, scale = true;
  int64_t mean_offset = -1, variance_offset = -1;  // moving statistics
  std::shared_ptr<detail::LayerImpl> impl;         // the tandem twin
  // Offsets into the flat parameter buffer, filled by bind(); -1: none. The probe's delta
  // sits at kernel_offset.
  int64_t kernel_offset = -1, bias_offset = -1;
};

struct RefNode {
  int layer = -1;  // -1: the model input
  std::vector<int> inputs;
  Shape shape;  // per sample, computed by the reference itself
  Node node;
};

// Values of one reference forward pass.
struct RefForward {
  std::vector<std::vector<double>> values;  // per node (batch, size)
  std::vector<double> logits;  // the output layer's pre-activation (Dense or Activation)
  // Per BatchNormalization in training: (moving_mean's offset, [mean..., variance...]).
  std::vector<std::pair<int64_t, std::vector<double>>> batch_stats;
  ActivationKind output_activation = ActivationKind::linear;
  // min |z| fed to a relu, and min gap between a max pool's largest and runner-up: how far
  // the base point sits from a kink
  double relu_margin = std::numeric_limits<double>::infinity();
};

inline double activate(ActivationKind k, double z) {
  switch (k) {
    case ActivationKind::relu:
      return z > 0 ? z : 0;
    case ActivationKind::sigmoid:
      return 1 / (1 + std::exp(-z));
    case ActivationKind::tanh:
      return std::tanh(z);
    default:
      return z;
  }
}

// In place over rows of `cols`; records how close relu inputs come to the kink.
inline void activate_rows(ActivationKind k, double* v, int64_t rows, int64_t cols,
                          double& relu_margin) {
  if (k == ActivationKind::softmax) {
    for (int64_t r = 0; r < rows; ++r) {
      double* row = v + r * cols;
      const double top = *std::max_element(row, row + cols);
      double sum = 0;
      for (int64_t j = 0; j < cols; ++j) sum += row[j] = std::exp(row[j] - top);
      for (int64_t j = 0; j < cols; ++j) row[j] /= sum;
    }
    return;
  }
  for (int64_t i = 0; i < rows * cols; ++i) {
    if (k == ActivationKind::relu) relu_margin = std::min(relu_margin, std::abs(v[i]));
    v[i] = activate(k, v[i]);
  }
}

class TwinNet {
 public:
  // probe_batch > 0 puts an InputProbe for that batch size after the input.
  TwinNet(const Shape& input_shape, int64_t probe_batch) {
    nodes_.push_back({-1, {}, input_shape, Input(input_shape)});
    x_ = 0;
    if (probe_batch > 0) {
      RefLayer probe;
      probe.op = RefOp::probe;
      probe.impl = std::make_shared<InputProbe>(probe_batch);
      probe_layer_ = add_layer(std::move(probe));
      x_ = call(probe_layer_, {0});
    }
  }

  int x() const { return x_; }  // the node layers should read as "the input"
  bool has_probe() const { return probe_layer_ >= 0; }
  const RefLayer& probe() const { return layers_.at(probe_layer_); }
  const Node& input_node() const { return nodes_.front().node; }
  const RefNode& node(int i) const { return nodes_.at(i); }
  const std::vector<RefLayer>& layers() const { return layers_; }

  int dense(int64_t units, const std::string& activation, bool use_bias = true,
            double bias_shift = 0) {
    RefLayer l;
    l.op = RefOp::dense;
    l.units = units;
    l.activation = parse_activation(activation, "test");
    l.use_bias = use_bias;
    l.bias_shift = bias_shift;
    l.impl = Dense(units, activation, {.use_bias = use_bias}).impl();
    return add_layer(std::move(l));
  }
  int activation(const std::string& name) {
    RefLayer l;
    l.op = RefOp::activation;
    l.activation = parse_activation(name, "test");
    l.impl = Activation(name).impl();
    return add_layer(std::move(l));
  }
  int flatten() { return add_simple(RefOp::flatten, Flatten().impl()); }
  int add() { return add_simple(RefOp::add, Add().impl()); }
  int concatenate(int axis) {
    RefLayer l;
    l.op = RefOp::concatenate;
    l.axis = axis;
    l.impl = Concatenate(axis).impl();
    return add_layer(std::move(l));
  }
  int dropout(double rate) {
    RefLayer l;
    l.op = RefOp::dropout;
    l.rate = rate;
    l.impl = Dropout(rate).impl();
    return add_layer(std::move(l));
  }

  int conv2d(int64_t filters, Size2 kernel, const std::string& activation, Size2 strides = 1,
             const std::string& padding = "valid", Size2 dilation = 1, bool use_bias = true) {
    RefLayer l;
    l.op = RefOp::conv2d;
    l.units = filters;
    l.activation = parse_activation(activation, "test");
    l.use_bias = use_bias;
    set_window(l, kernel, strides, padding);
    l.dilation_h = dilation.height, l.dilation_w = dilation.width;
    l.impl = Conv2D(filters, kernel, activation,
                    {.strides = strides,
                     .padding = padding,
                     .dilation_rate = dilation,
                     .use_bias = use_bias})
                 .impl();
    return add_layer(std::move(l));
  }
  int pool(bool max, Size2 size, std::optional<Size2> strides = {},
           const std::string& padding = "valid") {
    RefLayer l;
    l.op = max ? RefOp::max_pool : RefOp::average_pool;
    set_window(l, size, strides.value_or(size), padding);
    const Pool2DOptions options{.strides = strides, .padding = padding};
    l.impl = (max ? MaxPooling2D(size, options) : AveragePooling2D(size, options)).impl();
    return add_layer(std::move(l));
  }
  int global_average_pool() {
    return add_simple(RefOp::global_average_pool, GlobalAveragePooling2D().impl());
  }
  int zero_padding(Padding2D p) {
    RefLayer l;
    l.op = RefOp::zero_padding;
    l.pad_top = p.top, l.pad_bottom = p.bottom, l.pad_left = p.left, l.pad_right = p.right;
    l.impl = ZeroPadding2D(p).impl();
    return add_layer(std::move(l));
  }
  // synchronized: tandem's layer takes its synchronized path (the same function on one
  // replica).
  int batch_norm(bool center = true, bool scale = true, double epsilon = 1e-3,
                 bool synchronized = false) {
    RefLayer l;
    l.op = RefOp::batch_norm;
    l.center = center, l.scale = scale, l.epsilon = epsilon;
    l.impl =
        BatchNormalization(
            {.epsilon = epsilon, .center = center, .scale = scale, .synchronized = synchronized})
            .impl();
    return add_layer(std::move(l));
  }
  int reshape(const Shape& target) {
    RefLayer l;
    l.op = RefOp::reshape;
    l.target = target;
    l.impl = Reshape(target).impl();
    return add_layer(std::move(l));
  }

  // Calls layer on nodes (twice on one layer: shared weights); returns the new node.
  int call(int layer, const std::vector<int>& inputs) {
    std::vector<Node> in;
    std::vector<Shape> shapes;
    for (int i : inputs) {
      in.push_back(nodes_.at(i).node);
      shapes.push_back(nodes_.at(i).shape);
    }
    RefNode n{layer, inputs, reference_shape(layers_.at(layer), shapes),
              Layer(layers_.at(layer).impl)(in)};
    if (n.shape != n.node.shape()) {
      throw ShapeError("TwinNet: reference shape " + shape_to_string(n.shape) +
                       " but tandem says " + shape_to_string(n.node.shape()));
    }
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size()) - 1;
  }
  int call(int layer, int input) { return call(layer, std::vector<int>{input}); }

  // Reads where each Dense's kernel and bias live in the model's flat parameter buffer.
  void bind(const detail::Graph& graph) {
    for (RefLayer& l : layers_) {
      for (const detail::ParamEntry& e : graph.params()) {
        if (graph.layers()[e.layer_index].layer != l.impl) continue;
        if (e.spec.name == "kernel" || e.spec.name == "delta" || e.spec.name == "gamma")
          l.kernel_offset = e.offset;
        if (e.spec.name == "bias" || e.spec.name == "beta") l.bias_offset = e.offset;
        if (e.spec.name == "moving_mean") l.mean_offset = e.offset;
        if (e.spec.name == "moving_variance") l.variance_offset = e.offset;
      }
    }
  }

  // params: the flat buffer in f64. x (batch, input size). training: dropout rate 0 is still
  // the identity, so the reference treats dropout as identity and callers keep rate 0 then.
  RefForward forward(const std::vector<double>& params, const std::vector<double>& x, int64_t batch,
                     int output, bool training = true) const {
    RefForward f;
    f.values.resize(nodes_.size());
    f.values[0] = x;
    for (size_t i = 1; i < nodes_.size(); ++i) {
      const RefNode& n = nodes_[i];
      const RefLayer& l = layers_[n.layer];
      std::vector<const std::vector<double>*> in;
      for (int k : n.inputs) in.push_back(&f.values[k]);
      std::vector<double>& out = f.values[i];
      const int64_t size = shape_size(n.shape);
      out.assign(batch * size, 0.0);
      switch (l.op) {
        case RefOp::probe:
          for (int64_t j = 0; j < batch * size; ++j)
            out[j] = (*in[0])[j] + params[l.kernel_offset + j];
          break;
        case RefOp::dense: {
          const int64_t units = l.units, fan_in = nodes_[n.inputs[0]].shape.back();
          const int64_t rows = batch * size / units;
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t u = 0; u < units; ++u) {
              double z = l.use_bias ? params[l.bias_offset + u] : 0.0;
              for (int64_t k = 0; k < fan_in; ++k) {
                z += (*in[0])[r * fan_in + k] * params[l.kernel_offset + k * units + u];
              }
              out[r * units + u] = z;
            }
          }
          if (static_cast<int>(i) == output) f.logits = out;
          activate_rows(l.activation, out.data(), rows, units, f.relu_margin);
          break;
        }
        case RefOp::activation:
          out = *in[0];
          if (static_cast<int>(i) == output) f.logits = out;
          activate_rows(l.activation, out.data(), batch * size / n.shape.back(), n.shape.back(),
                        f.relu_margin);
          break;
        case RefOp::flatten:
        case RefOp::dropout:  // rate 0 in training, or inference: the identity
          out = *in[0];
          break;
        case RefOp::add:
          for (const auto* v : in) {
            for (int64_t j = 0; j < batch * size; ++j) out[j] += (*v)[j];
          }
          break;
        case RefOp::concatenate:
          concatenate_forward(n, l, in, batch, out);
          break;
        case RefOp::conv2d:
          conv2d_forward(n, l, params, *in[0], batch, out);
          if (static_cast<int>(i) == output) f.logits = out;
          activate_rows(l.activation, out.data(), batch * size / l.units, l.units, f.relu_margin);
          break;
        case RefOp::max_pool:
        case RefOp::average_pool:
          pool_forward(n, l, *in[0], batch, out, f.relu_margin);
          break;
        case RefOp::global_average_pool: {
          const Shape& is = nodes_[n.inputs[0]].shape;
          const int64_t area = is[0] * is[1], c = is[2];
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t p = 0; p < area; ++p) {
              for (int64_t k = 0; k < c; ++k) out[b * c + k] += (*in[0])[(b * area + p) * c + k];
            }
          }
          for (double& v : out) v /= static_cast<double>(area);
          break;
        }
        case RefOp::zero_padding: {
          const Shape& is = nodes_[n.inputs[0]].shape;
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t y = 0; y < is[0]; ++y) {
              for (int64_t x = 0; x < is[1]; ++x) {
                for (int64_t k = 0; k < is[2]; ++k) {
                  out[((b * n.shape[0] + y + l.pad_top) * n.shape[1] + x + l.pad_left) * is[2] +
                      k] = (*in[0])[((b * is[0] + y) * is[1] + x) * is[2] + k];
                }
              }
            }
          }
          break;
        }
        case RefOp::reshape:
          out = *in[0];
          break;
        case RefOp::batch_norm:
          batch_norm_forward(n, l, params, *in[0], batch, training, out, f);
          break;
        case RefOp::input:
          break;
      }
    }
    const RefLayer* last = nodes_[output].layer >= 0 ? &layers_[nodes_[output].layer] : nullptr;
    if (last &&
        (last->op == RefOp::dense || last->op == RefOp::activation || last->op == RefOp::conv2d)) {
      f.output_activation = last->activation;
    } else {
      f.logits.clear();
    }
    return f;
  }

 private:
  int add_layer(RefLayer l) {
    layers_.push_back(std::move(l));
    return static_cast<int>(layers_.size()) - 1;
  }
  int add_simple(RefOp op, std::shared_ptr<detail::LayerImpl> impl) {
    RefLayer l;
    l.op = op;
    l.impl = std::move(impl);
    return add_layer(std::move(l));
  }

  static Shape reference_shape(const RefLayer& l, const std::vector<Shape>& in) {
    switch (l.op) {
      case RefOp::dense: {
        Shape s = in.at(0);
        s.back() = l.units;
        return s;
      }
      case RefOp::flatten:
        return {shape_size(in.at(0))};
      case RefOp::conv2d:
      case RefOp::max_pool:
      case RefOp::average_pool: {
        const Shape& s = in.at(0);
        return {window_axis(l, s[0], true).out, window_axis(l, s[1], false).out,
                l.op == RefOp::conv2d ? l.units : s[2]};
      }
      case RefOp::global_average_pool:
        return {in.at(0)[2]};
      case RefOp::zero_padding: {
        const Shape& s = in.at(0);
        return {s[0] + l.pad_top + l.pad_bottom, s[1] + l.pad_left + l.pad_right, s[2]};
      }
      case RefOp::reshape: {
        Shape s = l.target;
        int64_t known = 1;
        for (int64_t d : s) known *= d == -1 ? 1 : d;
        for (int64_t& d : s) d = d == -1 ? shape_size(in.at(0)) / known : d;
        return s;
      }
      case RefOp::concatenate: {
        Shape s = in.at(0);
        const int axis = l.axis < 0 ? l.axis + static_cast<int>(s.size()) : l.axis;
        s[axis] = 0;
        for (const Shape& t : in) s[axis] += t[axis];
        return s;
      }
      default:
        return in.at(0);
    }
  }

  static void set_window(RefLayer& l, Size2 kernel, Size2 strides, const std::string& padding) {
    l.kernel_h = kernel.height, l.kernel_w = kernel.width;
    l.stride_h = strides.height, l.stride_w = strides.width;
    l.same_padding = padding == "same";
  }

  // One axis of a window, written out from Keras's documentation: "valid" keeps whole
  // windows; "same" gives ceil(in / stride) outputs, padding the odd cell after.
  struct Axis {
    int64_t out, pad_before;
  };
  static Axis window_axis(const RefLayer& l, int64_t in, bool height) {
    const int64_t k = height ? l.kernel_h : l.kernel_w, s = height ? l.stride_h : l.stride_w;
    const int64_t d = height ? l.dilation_h : l.dilation_w;
    const int64_t span = (k - 1) * d + 1;
    if (!l.same_padding) return {(in - span) / s + 1, 0};
    const int64_t out = (in + s - 1) / s;
    return {out, std::max<int64_t>((out - 1) * s + span - in, 0) / 2};
  }

  // y[b, oy, ox, f] = bias[f] + sum over ky, kx, c of x[b, iy, ix, c] * kernel[ky, kx, c, f]
  // with iy = oy * stride - pad + ky * dilation (cells outside the input are zero).
  void conv2d_forward(const RefNode& n, const RefLayer& l, const std::vector<double>& params,
                      const std::vector<double>& x, int64_t batch, std::vector<double>& out) const {
    const Shape& is = nodes_[n.inputs[0]].shape;
    const Shape& os = n.shape;
    const int64_t ih = is[0], iw = is[1], c = is[2], f = l.units;
    const int64_t pt = window_axis(l, ih, true).pad_before,
                  pl = window_axis(l, iw, false).pad_before;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t oy = 0; oy < os[0]; ++oy) {
        for (int64_t ox = 0; ox < os[1]; ++ox) {
          for (int64_t o = 0; o < f; ++o) {
            double z = l.use_bias ? params[l.bias_offset + o] : 0.0;
            for (int64_t ky = 0; ky < l.kernel_h; ++ky) {
              const int64_t iy = oy * l.stride_h - pt + ky * l.dilation_h;
              if (iy < 0 || iy >= ih) continue;
              for (int64_t kx = 0; kx < l.kernel_w; ++kx) {
                const int64_t ix = ox * l.stride_w - pl + kx * l.dilation_w;
                if (ix < 0 || ix >= iw) continue;
                for (int64_t k = 0; k < c; ++k) {
                  z += x[((b * ih + iy) * iw + ix) * c + k] *
                       params[l.kernel_offset + ((ky * l.kernel_w + kx) * c + k) * f + o];
                }
              }
            }
            out[((b * os[0] + oy) * os[1] + ox) * f + o] = z;
          }
        }
      }
    }
  }

  // Max or mean over the cells of each window that lie inside the input. For max, records
  // the gap between the largest and the runner-up: a tie is a kink.
  void pool_forward(const RefNode& n, const RefLayer& l, const std::vector<double>& x,
                    int64_t batch, std::vector<double>& out, double& kink_margin) const {
    const Shape& is = nodes_[n.inputs[0]].shape;
    const Shape& os = n.shape;
    const int64_t ih = is[0], iw = is[1], c = is[2];
    const int64_t pt = window_axis(l, ih, true).pad_before,
                  pl = window_axis(l, iw, false).pad_before;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t oy = 0; oy < os[0]; ++oy) {
        for (int64_t ox = 0; ox < os[1]; ++ox) {
          for (int64_t k = 0; k < c; ++k) {
            double top = -std::numeric_limits<double>::infinity(), second = top, sum = 0;
            int64_t cells = 0;
            for (int64_t ky = 0; ky < l.kernel_h; ++ky) {
              const int64_t iy = oy * l.stride_h - pt + ky;
              if (iy < 0 || iy >= ih) continue;
              for (int64_t kx = 0; kx < l.kernel_w; ++kx) {
                const int64_t ix = ox * l.stride_w - pl + kx;
                if (ix < 0 || ix >= iw) continue;
                const double v = x[((b * ih + iy) * iw + ix) * c + k];
                sum += v, ++cells;
                if (v > top)
                  second = top, top = v;
                else if (v > second)
                  second = v;
              }
            }
            if (l.op == RefOp::max_pool && cells > 1)
              kink_margin = std::min(kink_margin, top - second);
            out[((b * os[0] + oy) * os[1] + ox) * c + k] =
                l.op == RefOp::max_pool ? top : sum / static_cast<double>(cells);
          }
        }
      }
    }
  }

  // Per channel c (the last axis), over the rows r of (rows, channels):
  //   training:  mean = sum x / rows, variance = sum (x - mean)^2 / rows (biased)
  //   inference: the moving statistics
  //   y = gamma * (x - mean) / sqrt(variance + epsilon) + beta
  void batch_norm_forward(const RefNode& n, const RefLayer& l, const std::vector<double>& params,
                          const std::vector<double>& x, int64_t batch, bool training,
                          std::vector<double>& out, RefForward& f) const {
    const int64_t c = n.shape.back(), rows = batch * shape_size(n.shape) / c;
    std::vector<double> mean(c, 0.0), variance(c, 0.0);
    for (int64_t k = 0; k < c; ++k) {
      if (training) {
        for (int64_t r = 0; r < rows; ++r) mean[k] += x[r * c + k];
        mean[k] /= static_cast<double>(rows);
        for (int64_t r = 0; r < rows; ++r) {
          variance[k] += (x[r * c + k] - mean[k]) * (x[r * c + k] - mean[k]);
        }
        variance[k] /= static_cast<double>(rows);
      } else {
        mean[k] = params[l.mean_offset + k];
        variance[k] = params[l.variance_offset + k];
      }
      const double gamma = l.scale ? params[l.kernel_offset + k] : 1.0;
      const double beta = l.center ? params[l.bias_offset + k] : 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        out[r * c + k] =
            gamma * (x[r * c + k] - mean[k]) / std::sqrt(variance[k] + l.epsilon) + beta;
      }
    }
    mean.insert(mean.end(), variance.begin(), variance.end());
    f.batch_stats.push_back({l.mean_offset, std::move(mean)});
  }

  // Element by element: unravel each output index, find the input that owns its coordinate
  // along the axis, and read it there.
  void concatenate_forward(const RefNode& n, const RefLayer& l,
                           const std::vector<const std::vector<double>*>& in, int64_t batch,
                           std::vector<double>& out) const {
    const Shape& os = n.shape;
    const int rank = static_cast<int>(os.size());
    const int axis = l.axis < 0 ? l.axis + rank : l.axis;
    const int64_t size = shape_size(os);
    std::vector<int64_t> idx(rank);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t e = 0; e < size; ++e) {
        int64_t rest = e;
        for (int d = rank - 1; d >= 0; --d) {
          idx[d] = rest % os[d];
          rest /= os[d];
        }
        int64_t along = idx[axis];
        size_t which = 0;
        while (along >= nodes_[n.inputs[which]].shape[axis]) {
          along -= nodes_[n.inputs[which]].shape[axis];
          ++which;
        }
        const Shape& src = nodes_[n.inputs[which]].shape;
        int64_t flat = 0;
        for (int d = 0; d < rank; ++d) flat = flat * src[d] + (d == axis ? along : idx[d]);
        out[b * size + e] = (*in[which])[b * shape_size(src) + flat];
      }
    }
  }

  std::vector<RefNode> nodes_;
  std::vector<RefLayer> layers_;
  int x_ = 0;
  int probe_layer_ = -1;
};

// Keras's loss (Keras 3 / tf.keras, as scripts/golden/README.md quotes the source): a value per
// row of `classes`, averaged over the rows of a sample, then over the batch.
//   When the output layer ends in the activation the loss pairs with (softmax for the
//   categorical losses, sigmoid for binary), Keras takes the logits path on its
//   pre-activation and clips nothing. Otherwise the probability form, clipped to
//   [eps, 1 - eps]. (Keras 3 also takes a sigmoid's logits for a categorical loss and a
//   softmax's for binary; tandem and this reference do not follow that quirk.)
// prob_margin receives the least distance of a clipped quantity from the clip bounds, so a
// caller can make sure no clip is active (the clip's kink would spoil finite differences).
inline double reference_loss(detail::LossKind kind, const RefForward& f, int output,
                             const std::vector<double>& target, int64_t batch, int64_t classes,
                             double& prob_margin) {
  using detail::LossKind;
  const double eps = detail::kEpsilon;
  const auto clip = [&](double p) {
    prob_margin = std::min({prob_margin, p - eps, 1 - eps - p});
    return std::clamp(p, eps, 1 - eps);
  };
  const auto log_sum_exp = [](const double* z, int64_t c) {
    const double top = *std::max_element(z, z + c);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(z[j] - top);
    return top + std::log(sum);
  };
  const std::vector<double>& out = f.values.at(output);
  const bool pair_softmax = kind != LossKind::binary_crossentropy &&
                            kind != LossKind::mean_squared_error &&
                            f.output_activation == ActivationKind::softmax;
  const bool pair_sigmoid =
      kind == LossKind::binary_crossentropy && f.output_activation == ActivationKind::sigmoid;
  const std::vector<double> none;
  const std::vector<double>& logits = pair_softmax || pair_sigmoid ? f.logits : none;
  const int64_t rows = static_cast<int64_t>(out.size()) / classes;
  const int64_t rows_per_sample = rows / batch;
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* p = out.data() + r * classes;
    const double* z = logits.empty() ? nullptr : logits.data() + r * classes;
    const double* y =
        kind == LossKind::sparse_categorical_crossentropy ? nullptr : target.data() + r * classes;
    double loss = 0;
    switch (kind) {
      case LossKind::categorical_crossentropy:
        if (pair_softmax) {  // softmax_cross_entropy_with_logits
          const double lse = log_sum_exp(z, classes);
          for (int64_t j = 0; j < classes; ++j) loss -= y[j] * (z[j] - lse);
        } else {  // p / sum(p), clip, -sum y log
          double sum = 0;
          for (int64_t j = 0; j < classes; ++j) sum += p[j];
          for (int64_t j = 0; j < classes; ++j) loss -= y[j] * std::log(clip(p[j] / sum));
        }
        break;
      case LossKind::sparse_categorical_crossentropy: {
        const auto k = static_cast<int64_t>(target[r]);
        if (pair_softmax) {
          loss = log_sum_exp(z, classes) - z[k];
        } else {  // log(clip(p)) taken as logits of sparse_softmax_cross_entropy_with_logits
          std::vector<double> log_p(classes);
          for (int64_t j = 0; j < classes; ++j) log_p[j] = std::log(clip(p[j]));
          loss = log_sum_exp(log_p.data(), classes) - log_p[k];
        }
        break;
      }
      case LossKind::binary_crossentropy:
        for (int64_t j = 0; j < classes; ++j) {
          if (z) {  // sigmoid_cross_entropy_with_logits
            loss += std::max(z[j], 0.0) - z[j] * y[j] + std::log1p(std::exp(-std::abs(z[j])));
          } else {
            const double pc = clip(p[j]);
            loss -= y[j] * std::log(pc) + (1 - y[j]) * std::log(1 - pc);
          }
        }
        loss /= static_cast<double>(classes);
        break;
      case LossKind::mean_squared_error:
        for (int64_t j = 0; j < classes; ++j) loss += (p[j] - y[j]) * (p[j] - y[j]);
        loss /= static_cast<double>(classes);
        break;
    }
    total += loss;
  }
  return total / static_cast<double>(rows_per_sample) / static_cast<double>(batch);
}

}  // namespace tandem::test
