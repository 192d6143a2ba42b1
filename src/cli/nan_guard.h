// Runs whose numbers went wrong do not end as if they had succeeded. During training, a
// batch loss that is NaN or infinite stops the fit (Keras's TerminateOnNaN, on by default in
// the CLI) and the run ends with a NumericError before anything is saved; --continue-on-nan
// trains on and saves, saying so. A saved model whose weights hold NaN or infinities is
// refused by evaluate and predict.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tandem/callbacks.h"
#include "tandem/model.h"

namespace tandem::cli {

class NanGuard final : public Callback {
 public:
  explicit NanGuard(bool stop) : stop_(stop) {}
  void on_epoch_begin(int epoch, const Logs&) override { epoch_ = epoch; }
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  // Where the loss first stopped being finite, if it did: "epoch 2, step 17".
  const std::optional<std::string>& first_bad() const { return first_bad_; }

 private:
  bool stop_;
  int epoch_ = 0;
  std::optional<std::string> first_bad_;
};

// The first weight array that holds a NaN or an infinity, as "weight 3 (shape (512, 64))".
std::optional<std::string> non_finite_weight(const Model& model);

}  // namespace tandem::cli
