// Checkpoints of a fit in progress: weights, optimizer state and update count, and where
// the fit is (epoch, step, the seed that fixes data order and dropout, the partial epoch's
// sums, the history so far), so a resumed fit continues exactly (bitwise, in deterministic
// mode) where the checkpoint was taken. One tandem container per checkpoint, named by its
// global step, written atomically; the newest `keep` are kept, so a checkpoint found
// corrupt or truncated on resume is skipped in favour of the one before it.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/model_state.h"
#include "parallel/strategy.h"

namespace tandem::detail {

struct FitProgress {
  int epoch = 0;            // the epoch in progress, or the next one to start
  int64_t step = 0;         // steps of that epoch already done
  int64_t global_step = 0;  // steps over the whole fit (indexes the dropout streams)
  uint64_t seed = 0;        // shuffling and dropout
  BatchStats epoch_totals;  // sums over the steps done in this epoch
  History history;          // finished epochs
};

// What must not change between a checkpoint and its resume: the architecture, the data,
// batch size and shuffling (else the continued run is another run).
struct DataFingerprints {
  uint64_t x = 0, y = 0;  // Samples::fingerprint() of the training data and targets
};
// Also what a fit was asked for: the optimizer's hyperparameters, strategy, reducer,
// deterministic mode and the seed when one was given (null: any).
struct RunChoices {
  StrategyKind strategy = StrategyKind::mirrored;
  ReducerKind reducer = ReducerKind::sharded;
  bool deterministic = false;
  std::optional<uint64_t> seed;
};
nlohmann::json fit_identity(const ModelState& model, int64_t batch_size, int64_t samples,
                            const DataFingerprints& data, bool shuffle, const RunChoices& run);

std::string encode_checkpoint(const ModelState& model, const FitProgress& progress,
                              const nlohmann::json& identity);
// Restores model state and progress from a checkpoint's bytes (read from `path`).
// FormatError when the bytes are not a valid checkpoint or a field is out of range,
// ConfigError when it belongs to another run, listing every field that differs except those
// in `overrides` (the architecture cannot be overridden).
void decode_checkpoint(const std::string& bytes, const std::string& path, ModelState& model,
                       FitProgress& progress, const nlohmann::json& identity,
                       const std::vector<std::string>& overrides = {});
// The identity fields a resume may be told to let differ.
const std::vector<std::string>& overridable_fields();

class CheckpointDir {
 public:
  CheckpointDir(std::string dir, int keep);
  // Writes dir/ckpt-<global_step>.tandem atomically, then removes the checkpoints of other
  // timelines (every other one when `first_of_run` and the run did not resume; those past
  // global_step when it did: they are the abandoned future of a corrupt checkpoint), and
  // all but the newest `keep`. Returns the path.
  std::string save(const std::string& bytes, int64_t global_step, bool first_of_run = false,
                   bool resumed = false) const;
  struct Found {
    std::string path, bytes;
  };
  // The newest checkpoint whose container is intact. Each one found corrupt or truncated
  // is reported to `warn`, naming the file, the offset and the one tried next.
  std::optional<Found> newest_intact(std::ostream& warn) const;
  // Checkpoint files, oldest first.
  std::vector<std::string> list() const;
  // ConfigError naming the checkpoints already here (for a fresh run, which would replace
  // them); nothing when there are none.
  void check_empty() const;

 private:
  std::string dir_;
  int keep_;
};

}  // namespace tandem::detail
