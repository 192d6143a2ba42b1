// The models the checkpoint and weights harnesses read into, shared with the corpus
// generator so the seeds fit them.
#pragma once

#include <nlohmann/json.hpp>

#include "tandem/tandem.h"
#include "train/checkpoint.h"

namespace tandem::fuzz {

inline Model checkpoint_model() {
  set_random_seed(5);
  Sequential m({4}, {Dense(5, "relu"), Dropout(0.25), Dense(3, "softmax")});
  m.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  return m;
}

// The architecture the weights harness loads into (the "mlp-adam" model seed's).
inline Model weights_model() {
  auto in = Input({4});
  return Model(in, Dense(3, "softmax")(Dense(6, "relu")(in)));
}

// The model whose weights (model.weights.h5) the keras_config harness zips with each
// config.json it is given: a branch, BatchNormalization, and Adam's slots.
inline Model keras_model() {
  set_random_seed(7);
  auto in = Input({6, 6, 2});
  auto x = BatchNormalization()(Conv2D(3, 3, "relu", {.padding = "same"})(in));
  auto y = Concatenate()({MaxPooling2D(2)(x), AveragePooling2D(2)(x)});
  Model m(in, Dense(3, "softmax")(Dropout(0.5)(Flatten()(y))), "fuzz");
  m.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  return m;
}

inline nlohmann::json checkpoint_identity(const Model& m) {
  detail::RunChoices run;
  run.strategy = detail::StrategyKind::mirrored;
  run.reducer = detail::ReducerKind::allreduce;
  return detail::fit_identity(m.state(), 8, 32, {1, 2}, true, run);
}

}  // namespace tandem::fuzz
