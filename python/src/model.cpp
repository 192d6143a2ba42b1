// Model and Sequential: compile, fit, evaluate, predict, weights, files. Long calls release
// the GIL; numpy inputs are viewed, not copied (arrays.h).
#include "tandem/model.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <iostream>

#include "arrays.h"
#include "bindings.h"
#include "interrupt.h"

namespace tandem::python {
namespace {

nb::list weights_to_numpy(const std::vector<Tensor>& weights) {
  nb::list out;
  for (const Tensor& w : weights) out.append(to_numpy(w));
  return out;
}

std::vector<Tensor> weights_from_numpy(const std::vector<InputArray>& arrays) {
  std::vector<Tensor> out;
  out.reserve(arrays.size());
  for (const InputArray& a : arrays) out.push_back(to_tensor(a, "set_weights"));
  return out;
}

// catch_interrupt: fit runs on Python's main thread with Python's default SIGINT handler.
History fit(Model& model, const InputArray& x, const InputArray& y, FitOptions options,
            bool catch_interrupt) {
  const Samples xs = to_samples(x, "fit: x");
  const Samples ys = to_samples(y, "fit: y");
  InterruptGuard guard(catch_interrupt);
  if (auto stop = guard.callback()) options.callbacks.push_back(std::move(stop));
  History history;
  {
    nb::gil_scoped_release release;
    history = model.fit(xs, ys, options);
    std::cout.flush();
  }
  guard.raise_if_interrupted();
  return history;
}

}  // namespace

void bind_model(nb::module_& m) {
  nb::class_<Optimizer>(m, "Optimizer")
      .def(nb::init<>())
      .def_rw("name", &Optimizer::name)
      .def_rw("learning_rate", &Optimizer::learning_rate)
      .def_rw("momentum", &Optimizer::momentum)
      .def_rw("nesterov", &Optimizer::nesterov)
      .def_rw("rho", &Optimizer::rho)
      .def_rw("beta_1", &Optimizer::beta_1)
      .def_rw("beta_2", &Optimizer::beta_2)
      .def_rw("epsilon", &Optimizer::epsilon);

  nb::class_<History>(m, "History")
      .def_ro("epoch", &History::epoch)
      .def_ro("history", &History::history);

  nb::class_<FitOptions>(m, "FitOptions")
      .def(nb::init<>())
      .def_rw("batch_size", &FitOptions::batch_size)
      .def_rw("epochs", &FitOptions::epochs)
      .def_rw("verbose", &FitOptions::verbose)
      .def_rw("shuffle", &FitOptions::shuffle)
      .def_rw("seed", &FitOptions::seed)
      .def_rw("validation_split", &FitOptions::validation_split)
      .def_rw("callbacks", &FitOptions::callbacks)
      .def_rw("initial_epoch", &FitOptions::initial_epoch)
      .def_rw("devices", &FitOptions::devices)
      .def_rw("strategy", &FitOptions::strategy)
      .def_rw("threads_per_device", &FitOptions::threads_per_device)
      .def_rw("deterministic", &FitOptions::deterministic)
      .def_rw("bucket_bytes", &FitOptions::bucket_bytes)
      .def_rw("reducer", &FitOptions::reducer)
      .def_rw("shared_parameters", &FitOptions::shared_parameters)
      .def_rw("distributed", &FitOptions::distributed)
      .def_rw("grad_compression", &FitOptions::grad_compression)
      .def_rw("checkpoint_dir", &FitOptions::checkpoint_dir)
      .def_rw("checkpoint_every", &FitOptions::checkpoint_every)
      .def_rw("checkpoint_unit", &FitOptions::checkpoint_unit)
      .def_rw("keep_checkpoints", &FitOptions::keep_checkpoints)
      .def_rw("resume", &FitOptions::resume)
      .def_rw("resume_overrides", &FitOptions::resume_overrides)
      .def_rw("overwrite_checkpoints", &FitOptions::overwrite_checkpoints)
      .def_rw("trace_path", &FitOptions::trace_path)
      .def(
          "set_validation_data",
          [](FitOptions& o, const InputArray& x, const InputArray& y) {
            o.validation_data.emplace(to_samples(x, "validation_data: x"),
                                      to_samples(y, "validation_data: y"));
          },
          nb::arg("x"), nb::arg("y"));

  nb::class_<Model>(m, "Model")
      .def(nb::init<const Node&, const Node&, const std::string&>(), nb::arg("inputs"),
           nb::arg("outputs"), nb::arg("name"))
      .def("compile",
           nb::overload_cast<const Optimizer&, const std::string&, const std::vector<std::string>&>(
               &Model::compile),
           nb::arg("optimizer"), nb::arg("loss"), nb::arg("metrics"))
      .def("fit", &fit, nb::arg("x"), nb::arg("y"), nb::arg("options"), nb::arg("catch_interrupt"))
      .def(
          "evaluate",
          [](Model& model, const InputArray& x, const InputArray& y, int64_t batch_size,
             int verbose) {
            const Samples xs = to_samples(x, "evaluate: x");
            const Samples ys = to_samples(y, "evaluate: y");
            nb::gil_scoped_release release;
            auto logs = model.evaluate(xs, ys, {.batch_size = batch_size, .verbose = verbose});
            std::cout.flush();
            return logs;
          },
          nb::arg("x"), nb::arg("y"), nb::arg("batch_size"), nb::arg("verbose"))
      .def(
          "predict",
          [](Model& model, const InputArray& x, int64_t batch_size, int verbose) {
            const Samples xs = to_samples(x, "predict: x");
            Tensor out;
            {
              nb::gil_scoped_release release;
              out = model.predict(xs, {.batch_size = batch_size, .verbose = verbose});
              std::cout.flush();
            }
            return to_numpy(std::move(out));
          },
          nb::arg("x"), nb::arg("batch_size"), nb::arg("verbose"))
      .def(
          "train_on_batch",
          [](Model& model, const InputArray& x, const InputArray& y) {
            const Samples xs = to_samples(x, "train_on_batch: x");
            const Samples ys = to_samples(y, "train_on_batch: y");
            nb::gil_scoped_release release;
            return model.train_on_batch(xs, ys);
          },
          nb::arg("x"), nb::arg("y"))
      .def("summary_string", &Model::summary_string)
      .def("count_params", &Model::count_params)
      .def_prop_ro("name", &Model::name)
      .def_prop_ro("input_shape", &Model::input_shape)
      .def_prop_ro("output_shape", &Model::output_shape)
      .def("get_weights", [](const Model& model) { return weights_to_numpy(model.get_weights()); })
      .def(
          "set_weights",
          [](Model& model, const std::vector<InputArray>& weights) {
            model.set_weights(weights_from_numpy(weights));
          },
          nb::arg("weights"))
      .def("save", &Model::save, nb::arg("path"), nb::call_guard<nb::gil_scoped_release>())
      .def_static(
          "load",
          [](const std::string& path, bool compile) {
            return Model::load(path, LoadOptions{.compile = compile});
          },
          nb::arg("path"), nb::arg("compile") = true, nb::call_guard<nb::gil_scoped_release>())
      .def("save_weights", &Model::save_weights, nb::arg("path"),
           nb::call_guard<nb::gil_scoped_release>())
      .def("load_weights", &Model::load_weights, nb::arg("path"),
           nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("loss", &Model::loss)
      .def_prop_ro("optimizer", &Model::optimizer)
      .def_prop_ro("metrics", &Model::metrics)
      .def_prop_rw("learning_rate", &Model::learning_rate, &Model::set_learning_rate)
      .def_rw("stop_training", &Model::stop_training)
      .def("run_times", [](const Model& model) {
        const RunTimes& t = model.run_times();
        nb::dict out;
        out["fit_seconds"] = t.fit_seconds;
        out["predict_seconds"] = t.predict_seconds;
        out["evaluate_seconds"] = t.evaluate_seconds;
        out["train_steps"] = t.train_steps;
        out["phase_seconds"] = t.phase_seconds;
        return out;
      });

  nb::class_<Sequential, Model>(m, "Sequential")
      .def(nb::init<const std::string&>(), nb::arg("name"))
      .def("add", nb::overload_cast<const Layer&>(&Sequential::add), nb::arg("layer"))
      .def("add", nb::overload_cast<const Node&>(&Sequential::add), nb::arg("input"));
}

}  // namespace tandem::python
