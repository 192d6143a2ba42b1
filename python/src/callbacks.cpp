// Callbacks: Keras's built-in ones (C++), and a bridge that calls a Python Callback's
// overridden methods. Hooks the Python class does not override are never entered, so a fit
// without Python callbacks runs no Python code per batch.
#include "tandem/callbacks.h"

#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <iostream>

#include "bindings.h"
#include "callback_errors.h"
#include "tandem/error.h"

namespace tandem::python {
namespace {

enum Hook : unsigned {
  kTrainBegin = 1u << 0,
  kTrainEnd = 1u << 1,
  kEpochBegin = 1u << 2,
  kEpochEnd = 1u << 3,
  kBatchBegin = 1u << 4,
  kBatchEnd = 1u << 5,
};

void flush_python_stdout() {
  PyObject* out = PySys_GetObject("stdout");  // borrowed
  if (out && out != Py_None) nb::handle(out).attr("flush")();
}

class PythonCallback final : public Callback {
 public:
  PythonCallback(nb::object target, unsigned hooks) : target_(std::move(target)), hooks_(hooks) {}
  ~PythonCallback() override {
    nb::gil_scoped_acquire gil;
    target_.reset();
  }
  void on_train_begin(const Logs& logs) override { call(kTrainBegin, "on_train_begin", logs); }
  void on_train_end(const Logs& logs) override { call(kTrainEnd, "on_train_end", logs); }
  void on_epoch_begin(int epoch, const Logs& logs) override {
    call(kEpochBegin, "on_epoch_begin", logs, epoch);
  }
  void on_epoch_end(int epoch, const Logs& logs) override {
    call(kEpochEnd, "on_epoch_end", logs, epoch);
  }
  void on_train_batch_begin(int64_t batch, const Logs& logs) override {
    call(kBatchBegin, "on_train_batch_begin", logs, batch);
  }
  void on_train_batch_end(int64_t batch, const Logs& logs) override {
    call(kBatchEnd, "on_train_batch_end", logs, batch);
  }

 private:
  template <class... Index>
  void call(Hook hook, const char* method, const Logs& logs, Index... index) {
    if (!(hooks_ & hook)) return;
    std::cout.flush();  // what C++ printed comes before what the callback prints
    nb::gil_scoped_acquire gil;
    try {
      target_.attr(method)(index..., nb::cast(logs));
      flush_python_stdout();
    } catch (nb::python_error& e) {
      keep_callback_error(e);
    }
  }

  nb::object target_;
  unsigned hooks_;
};

}  // namespace

void bind_callbacks(nb::module_& m) {
  nb::class_<Callback>(m, "Callback");
  m.attr("HOOK_TRAIN_BEGIN") = unsigned{kTrainBegin};
  m.attr("HOOK_TRAIN_END") = unsigned{kTrainEnd};
  m.attr("HOOK_EPOCH_BEGIN") = unsigned{kEpochBegin};
  m.attr("HOOK_EPOCH_END") = unsigned{kEpochEnd};
  m.attr("HOOK_BATCH_BEGIN") = unsigned{kBatchBegin};
  m.attr("HOOK_BATCH_END") = unsigned{kBatchEnd};

  m.def(
      "PythonCallback",
      [](nb::object target, unsigned hooks) -> std::shared_ptr<Callback> {
        return std::make_shared<PythonCallback>(std::move(target), hooks);
      },
      nb::arg("target"), nb::arg("hooks"));

  m.def(
      "EarlyStopping",
      [](std::string monitor, double min_delta, int patience, std::string mode, nb::object baseline,
         bool restore_best_weights) {
        EarlyStoppingOptions o{.monitor = std::move(monitor),
                               .min_delta = min_delta,
                               .patience = patience,
                               .mode = std::move(mode),
                               .restore_best_weights = restore_best_weights};
        if (!baseline.is_none()) {
          o.baseline = nb::cast<double>(baseline);
          o.has_baseline = true;
        }
        return EarlyStopping(o);
      },
      nb::arg("monitor"), nb::arg("min_delta"), nb::arg("patience"), nb::arg("mode"),
      nb::arg("baseline").none(), nb::arg("restore_best_weights"));
  m.def(
      "ModelCheckpoint",
      [](const std::string& filepath, std::string monitor, bool save_best_only,
         bool save_weights_only, std::string mode) {
        return ModelCheckpoint(filepath, {.monitor = std::move(monitor),
                                          .save_best_only = save_best_only,
                                          .save_weights_only = save_weights_only,
                                          .mode = std::move(mode)});
      },
      nb::arg("filepath"), nb::arg("monitor"), nb::arg("save_best_only"),
      nb::arg("save_weights_only"), nb::arg("mode"));
  m.def("TerminateOnNaN", &TerminateOnNaN);
  m.def(
      "CSVLogger",
      [](const std::string& filename, const std::string& separator, bool append) {
        if (separator.size() != 1) {
          throw ConfigError("CSVLogger: separator must be one character, got '" + separator + "'");
        }
        return CSVLogger(filename, separator[0], append);
      },
      nb::arg("filename"), nb::arg("separator"), nb::arg("append"));
  m.def(
      "LearningRateScheduler",
      [](nb::object schedule) {
        // Called with the GIL released by fit: take it, and carry a Python error out whole.
        auto held = std::make_shared<nb::object>(std::move(schedule));
        auto release = std::shared_ptr<void>(nullptr, [held](void*) {
          nb::gil_scoped_acquire gil;
          held->reset();
        });
        return LearningRateScheduler([held, release](int epoch, double lr) {
          nb::gil_scoped_acquire gil;
          try {
            return nb::cast<double>((*held)(epoch, lr));
          } catch (nb::python_error& e) {
            keep_callback_error(e);
          } catch (nb::cast_error&) {
            throw ConfigError("LearningRateScheduler: the schedule must return a number");
          }
        });
      },
      nb::arg("schedule"));
}

}  // namespace tandem::python
