// The standard callbacks: EarlyStopping, ModelCheckpoint, TerminateOnNaN, CSVLogger,
// LearningRateScheduler.
#include "tandem/callbacks.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <regex>

#include "tandem/error.h"
#include "tandem/model.h"
#include "tandem/mpi.h"
#include "train/progress.h"

namespace tandem {
namespace {

// Keras's "auto": maximise accuracy-like quantities, minimise the rest.
bool maximises(const std::string& monitor, const std::string& mode) {
  if (mode == "max") return true;
  if (mode == "min") return false;
  if (mode != "auto") throw ConfigError("mode must be auto, min or max, got '" + mode + "'");
  return monitor.find("acc") != std::string::npos;
}

// In a multi-process job every rank runs the same callbacks on the same logs; the files they
// write are rank 0's alone (the others would truncate or replace the same files).
bool writes_files() {
  return mpi::rank() == 0;
}

const double* find_log(const Logs& logs, const std::string& key) {
  auto it = logs.find(key);
  return it == logs.end() ? nullptr : &it->second;
}

class EarlyStoppingCallback final : public Callback {
 public:
  explicit EarlyStoppingCallback(EarlyStoppingOptions o)
      : o_(std::move(o)), maximise_(maximises(o_.monitor, o_.mode)) {
    if (o_.patience < 0) throw ConfigError("EarlyStopping: patience must be >= 0");
  }
  void on_train_begin(const Logs&) override {
    wait_ = 0;
    best_ = o_.has_baseline ? o_.baseline
                            : (maximise_ ? -std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::infinity());
    best_weights_.clear();
  }
  void on_epoch_end(int, const Logs& logs) override {
    const double* value = find_log(logs, o_.monitor);
    if (!value) {
      std::cerr << "EarlyStopping: monitored '" << o_.monitor << "' is not in the logs\n";
      return;
    }
    const double delta = std::abs(o_.min_delta);
    const bool improved = maximise_ ? *value - delta > best_ : *value + delta < best_;
    if (improved) {
      best_ = *value;
      wait_ = 0;
      if (o_.restore_best_weights) best_weights_ = model().get_weights();
      return;
    }
    if (++wait_ >= o_.patience) {  // Keras: stop once `patience` epochs did not improve
      model().stop_training = true;
      if (o_.restore_best_weights && !best_weights_.empty()) model().set_weights(best_weights_);
    }
  }

 private:
  EarlyStoppingOptions o_;
  bool maximise_;
  int wait_ = 0;
  double best_ = 0;
  std::vector<Tensor> best_weights_;
};

std::string expand_epoch(const std::string& pattern, int epoch) {
  // {epoch} or {epoch:02d}: the 1-based epoch, zero-padded to the given width.
  static const std::regex placeholder(R"(\{epoch(?::0?(\d+)d)?\})");
  std::smatch m;
  std::string out, rest = pattern;
  while (std::regex_search(rest, m, placeholder)) {
    const int width = m[1].matched ? std::stoi(m[1].str()) : 0;
    std::string number = std::to_string(epoch + 1);
    if (static_cast<int>(number.size()) < width) number.insert(0, width - number.size(), '0');
    out += m.prefix().str() + number;
    rest = m.suffix().str();
  }
  return out + rest;
}

class ModelCheckpointCallback final : public Callback {
 public:
  ModelCheckpointCallback(std::string path, ModelCheckpointOptions o)
      : path_(std::move(path)), o_(std::move(o)), maximise_(maximises(o_.monitor, o_.mode)) {
    best_ = maximise_ ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
  }
  void on_epoch_end(int epoch, const Logs& logs) override {
    if (!writes_files()) return;
    if (o_.save_best_only) {
      const double* value = find_log(logs, o_.monitor);
      if (!value) {
        std::cerr << "ModelCheckpoint: monitored '" << o_.monitor << "' is not in the logs\n";
        return;
      }
      if (!(maximise_ ? *value > best_ : *value < best_)) return;
      best_ = *value;
    }
    const std::string path = expand_epoch(path_, epoch);
    if (o_.save_weights_only)
      model().save_weights(path);
    else
      model().save(path);
  }

 private:
  std::string path_;
  ModelCheckpointOptions o_;
  bool maximise_;
  double best_;
};

class TerminateOnNaNCallback final : public Callback {
 public:
  void on_train_batch_end(int64_t batch, const Logs& logs) override {
    const double* loss = find_log(logs, "loss");
    if (loss && !std::isfinite(*loss)) {
      std::cout << "\nBatch " << batch << ": Invalid loss, terminating training\n";
      model().stop_training = true;
    }
  }
};

class CSVLoggerCallback final : public Callback {
 public:
  CSVLoggerCallback(std::string filename, char separator, bool append)
      : filename_(std::move(filename)), separator_(separator), append_(append) {}
  void on_train_begin(const Logs&) override {
    if (!writes_files()) return;
    const bool exists = std::ifstream(filename_).good();
    write_header_ = !(append_ && exists);
    file_.open(filename_, append_ ? std::ios::app : std::ios::trunc);
    if (!file_) throw IoError(filename_, "CSVLogger: cannot open for writing");
  }
  void on_epoch_end(int epoch, const Logs& logs) override {
    if (!file_.is_open()) return;  // not rank 0
    if (write_header_) {
      file_ << "epoch";
      for (const auto& [k, v] : logs) file_ << separator_ << k;
      file_ << "\n";
      write_header_ = false;
    }
    file_ << epoch;
    for (const auto& [k, v] : logs) file_ << separator_ << detail::format_log_value(v);
    file_ << "\n" << std::flush;
    if (!file_) throw IoError(filename_, "CSVLogger: write failed");
  }
  void on_train_end(const Logs&) override { file_.close(); }

 private:
  std::string filename_;
  char separator_;
  bool append_;
  bool write_header_ = true;
  std::ofstream file_;
};

class LearningRateSchedulerCallback final : public Callback {
 public:
  explicit LearningRateSchedulerCallback(std::function<double(int, double)> schedule)
      : schedule_(std::move(schedule)) {
    if (!schedule_) throw ConfigError("LearningRateScheduler: empty schedule");
  }
  void on_epoch_begin(int epoch, const Logs&) override {
    model().set_learning_rate(schedule_(epoch, model().learning_rate()));
  }

 private:
  std::function<double(int, double)> schedule_;
};

}  // namespace

std::shared_ptr<Callback> EarlyStopping(EarlyStoppingOptions options) {
  return std::make_shared<EarlyStoppingCallback>(std::move(options));
}
std::shared_ptr<Callback> ModelCheckpoint(const std::string& filepath,
                                          ModelCheckpointOptions options) {
  return std::make_shared<ModelCheckpointCallback>(filepath, std::move(options));
}
std::shared_ptr<Callback> TerminateOnNaN() {
  return std::make_shared<TerminateOnNaNCallback>();
}
std::shared_ptr<Callback> CSVLogger(const std::string& filename, char separator, bool append) {
  return std::make_shared<CSVLoggerCallback>(filename, separator, append);
}
std::shared_ptr<Callback> LearningRateScheduler(std::function<double(int, double)> schedule) {
  return std::make_shared<LearningRateSchedulerCallback>(std::move(schedule));
}

}  // namespace tandem
