// Callbacks, as in Keras: hooks around training. `logs` carries loss, metrics and, at epoch
// end, val_* values; callbacks may read the model and set model.stop_training.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tandem {

class Model;
using Logs = std::map<std::string, double>;

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(const Logs&) {}
  virtual void on_train_end(const Logs&) {}
  virtual void on_epoch_begin(int epoch, const Logs&) {}
  virtual void on_epoch_end(int epoch, const Logs&) {}
  virtual void on_train_batch_begin(int64_t batch, const Logs&) {}
  virtual void on_train_batch_end(int64_t batch, const Logs&) {}

  void set_model(Model* model) { model_ = model; }

 protected:
  Model& model() const;

 private:
  Model* model_ = nullptr;
};

using CallbackList = std::vector<std::shared_ptr<Callback>>;

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;
  int patience = 0;
  std::string mode = "auto";  // min | max | auto (max for names containing "acc")
  double baseline = 0.0;
  bool has_baseline = false;
  bool restore_best_weights = false;
};
// Stops training when `monitor` stops improving for `patience` epochs.
std::shared_ptr<Callback> EarlyStopping(EarlyStoppingOptions options = {});

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  bool save_best_only = false;
  bool save_weights_only = false;
  std::string mode = "auto";
};
// Saves the model (or its weights) after every epoch, or only when `monitor` improves.
// In a multi-process (MPI) job only rank 0 writes.
// "{epoch}" in the path becomes the 1-based epoch number (Keras's {epoch:02d} works too).
std::shared_ptr<Callback> ModelCheckpoint(const std::string& filepath,
                                          ModelCheckpointOptions options = {});

// Stops training as soon as a batch's loss is NaN or infinite.
std::shared_ptr<Callback> TerminateOnNaN();

// Appends one row per epoch (epoch, then the logs in name order) to a CSV file. In a
// multi-process (MPI) job only rank 0 opens and writes it.
std::shared_ptr<Callback> CSVLogger(const std::string& filename, char separator = ',',
                                    bool append = false);

// Sets the learning rate at each epoch's start to schedule(epoch, current_lr).
std::shared_ptr<Callback> LearningRateScheduler(std::function<double(int, double)> schedule);

}  // namespace tandem
