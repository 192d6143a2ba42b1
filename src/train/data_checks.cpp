#include "train/data_checks.h"

#include <cmath>

#include "tandem/error.h"

namespace tandem::detail {

void check_batch_size(int64_t batch_size, const std::string& where) {
  if (batch_size <= 0) {
    throw ConfigError(where + ": batch_size must be > 0, got " + std::to_string(batch_size));
  }
}

void check_inputs(const ModelState& model, const Samples& x, const std::string& where) {
  const Shape& expected = model.graph->input().shape;
  if (x.sample_shape() != expected) {
    throw ShapeError(where + ": model '" + model.name + "' expects inputs of shape " +
                     batch_shape_to_string(expected) + " but x has per-sample shape " +
                     shape_to_string(x.sample_shape()) +
                     (shape_size(x.sample_shape()) == shape_size(expected)
                          ? " (same size: reshape x, e.g. x.reshape({-1, ...}))"
                          : ""));
  }
  if (x.count() == 0) throw ShapeError(where + ": x has no samples");
}

void check_targets(const ModelState& model, const Samples& x, const Samples& y,
                   const std::string& where) {
  check_inputs(model, x, where);
  if (x.count() != y.count()) {
    throw ShapeError(where + ": x has " + std::to_string(x.count()) + " samples but y has " +
                     std::to_string(y.count()));
  }
  const Compiled& c = model.require_compiled(where.c_str());
  const int64_t out = model.graph->output().size, classes = model.classes();
  const int64_t expected = c.loss.target_size(out, classes);
  if (y.sample_size() != expected) {
    std::string hint;
    if (c.loss.kind() == LossKind::categorical_crossentropy && y.sample_size() * classes == out) {
      hint = " (integer labels: use to_categorical(y) or loss sparse_categorical_crossentropy)";
    } else if (c.loss.kind() == LossKind::sparse_categorical_crossentropy &&
               y.sample_size() == out) {
      hint = " (one-hot targets: use loss categorical_crossentropy)";
    }
    throw ShapeError(where + ": loss " + loss_name(c.loss.kind()) + " on output " +
                     shape_to_string(model.graph->output().shape) + " needs " +
                     std::to_string(expected) + " target values per sample, y has " +
                     std::to_string(y.sample_size()) + hint);
  }
  if (c.loss.kind() == LossKind::sparse_categorical_crossentropy) {
    for (int64_t i = 0; i < y.count(); ++i) {
      for (int64_t j = 0; j < y.sample_size(); ++j) {
        const float label = y.at(i, j);
        if (!(label >= 0 && label < classes && std::floor(label) == label)) {
          throw ShapeError(where + ": label " + std::to_string(label) + " of sample " +
                           std::to_string(i) + " is not an integer class in [0, " +
                           std::to_string(classes) + ")");
        }
      }
    }
  }
}

}  // namespace tandem::detail
