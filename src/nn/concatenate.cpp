// Concatenate along a per-sample axis. Inputs (batch, ..., a_i, ...) -> (batch, ..., sum a_i, ...)
// Viewed as (outer, a_i * inner) blocks: outer = batch * dims before the axis,
// inner = dims after it.
#include "core/parallel_for.h"
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class ConcatenateLayer final : public LayerImpl {
 public:
  explicit ConcatenateLayer(int axis) : axis_(axis) {}
  std::string type() const override { return "Concatenate"; }

  Shape output_shape(const std::vector<Shape>& inputs) const override {
    if (inputs.size() < 2) {
      throw ShapeError("Concatenate '" + name + "': expects at least two inputs");
    }
    const int rank = static_cast<int>(inputs[0].size());
    const int axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank) {
      throw ShapeError("Concatenate '" + name + "': axis " + std::to_string(axis_) +
                       " out of range for per-sample shape " + shape_to_string(inputs[0]));
    }
    Shape out = inputs[0];
    out[axis] = 0;
    for (const Shape& s : inputs) {
      bool fits = static_cast<int>(s.size()) == rank;
      for (int d = 0; fits && d < rank; ++d) fits = d == axis || s[d] == inputs[0][d];
      if (!fits) {
        throw ShapeError("Concatenate '" + name + "': shapes " + shape_to_string(inputs[0]) +
                         " and " + shape_to_string(s) + " differ off axis " + std::to_string(axis));
      }
      out[axis] += s[axis];
    }
    return out;
  }

  // Row by row of the output (a pixel's channels, for channels-last images), each row
  // gathered from every input in turn: rows in parallel, and the short copies inlined (a
  // library copy per 32-float slice costs more than the copy).
  void forward(const ForwardArgs& a) override {
    const Layout l = layout(a);
    const auto n = static_cast<int64_t>(a.inputs.size());
#pragma omp parallel for num_threads(a.backend.threads()) if (l.outer * l.out_width >= \
                                                              kParallelGrain)
    for (int64_t o = 0; o < l.outer; ++o) {
      float* out = a.output + o * l.out_width;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t width = a.input_sizes[i] / l.outer_per_sample;  // a_i * inner
        const float* in = a.inputs[i] + o * width;
#pragma omp simd
        for (int64_t k = 0; k < width; ++k) out[k] = in[k];
        out += width;
      }
    }
  }

  void backward(const BackwardArgs& b) override {
    const ForwardArgs& a = b.forward;
    const Layout l = layout(a);
    const auto n = static_cast<int64_t>(a.inputs.size());
#pragma omp parallel for num_threads(a.backend.threads()) if (l.outer * l.out_width >= \
                                                              kParallelGrain)
    for (int64_t o = 0; o < l.outer; ++o) {
      const float* dy = b.grad_output + o * l.out_width;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t width = a.input_sizes[i] / l.outer_per_sample;
        const GradTarget& dx = b.grad_inputs[i];
        if (dx.data) {
          float* d = dx.data + o * width;
          if (dx.accumulate) {
#pragma omp simd
            for (int64_t k = 0; k < width; ++k) d[k] += dy[k];
          } else {
#pragma omp simd
            for (int64_t k = 0; k < width; ++k) d[k] = dy[k];
          }
        }
        dy += width;
      }
    }
  }

  nlohmann::json config() const override {
    return {{"name", name}, {"axis", axis_}};
  }

 private:
  struct Layout {
    int64_t outer_per_sample, outer, out_width;
  };
  Layout layout(const ForwardArgs& a) const {
    const int rank = static_cast<int>(a.output_shape.size());
    const int axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= a.output_shape[d];
    return {outer, a.batch * outer, a.output_size / outer};
  }

  int axis_;
};

}  // namespace

std::shared_ptr<LayerImpl> concatenate_from_config(const nlohmann::json& c) {
  return std::make_shared<ConcatenateLayer>(c.value("axis", -1));
}

}  // namespace tandem::detail

namespace tandem {

Layer Concatenate(int axis, const std::string& name) {
  auto layer = std::make_shared<detail::ConcatenateLayer>(axis);
  layer->name = name;
  return Layer(layer);
}

}  // namespace tandem
