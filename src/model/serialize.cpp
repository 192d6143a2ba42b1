// Model::save / load / save_weights / load_weights over the container format.
//   weights file: {"kind": "weights", "weights": [{"layer", "name", "shape"}...]}
//                 sections "w0", "w1", ... in get_weights() order
//   model file:   {"kind": "model", "name", "architecture", "compile": {...}, "iterations",
//                  "learning_rate"} + the weight sections + "optimizer/<slot>" sections
#include <nlohmann/json.hpp>

#include "model/container.h"
#include "model/model_state.h"
#include "tandem/error.h"
#include "tandem/model.h"

namespace tandem {
namespace {

using nlohmann::json;

void add_weights(const detail::ModelState& s, const std::vector<Tensor>& weights,
                 detail::Container& c) {
  json list = json::array();
  for (size_t i = 0; i < weights.size(); ++i) {
    const auto& e = s.graph->params()[i];
    list.push_back({{"layer", s.graph->layers()[e.layer_index].layer->name},
                    {"name", e.spec.name},
                    {"shape", e.spec.shape}});
    c.sections.push_back(
        {"w" + std::to_string(i),
         std::vector<float>(weights[i].data(), weights[i].data() + weights[i].size())});
  }
  c.header["weights"] = list;
}

// The file's weights as tensors, checked against the model's layout: count, then each
// shape, with the layer named on a mismatch.
std::vector<Tensor> read_weights(const detail::ModelState& s, const detail::Container& c,
                                 const std::string& path) {
  const auto& params = s.graph->params();
  const json list = c.header.value("weights", json::array());
  if (list.size() != params.size()) {
    throw ShapeError(path + ": holds " + std::to_string(list.size()) +
                     " weight arrays but model '" + s.name + "' has " +
                     std::to_string(params.size()) + " (a different architecture)");
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& e = params[i];
    const std::string layer = s.graph->layers()[e.layer_index].layer->name;
    Shape shape;
    try {
      shape = list[i].at("shape").get<Shape>();
    } catch (const json::exception&) {
      throw FormatError(path, 0, "weight entry " + std::to_string(i) + " has no valid shape");
    }
    if (shape != e.spec.shape) {
      throw ShapeError(path + ": weight " + std::to_string(i) + " (" + list[i].value("layer", "?") +
                       "/" + list[i].value("name", "?") + ") has shape " + shape_to_string(shape) +
                       " but layer '" + layer + "' " + e.spec.name + " needs " +
                       shape_to_string(e.spec.shape) + " (a different architecture)");
    }
    const auto& values = c.section("w" + std::to_string(i), path).values;
    if (static_cast<int64_t>(values.size()) != shape_size(shape)) {
      throw FormatError(path, 0,
                        "weight " + std::to_string(i) + " has " + std::to_string(values.size()) +
                            " values for shape " + shape_to_string(shape));
    }
    out.emplace_back(shape, values);
  }
  return out;
}

}  // namespace

void Model::save_weights(const std::string& path) const {
  ensure_built();
  detail::Container c;
  c.header["kind"] = "weights";
  add_weights(*state_, get_weights(), c);
  detail::write_container(path, std::move(c));
}

void Model::load_weights(const std::string& path) {
  ensure_built();
  const auto c = detail::read_container(path, "");
  const std::string kind = c.header.value("kind", "");
  if (kind != "weights" && kind != "model") {
    throw FormatError(path, 16, "holds a '" + kind + "', expected weights or a model");
  }
  set_weights(read_weights(*state_, c, path));
}

void Model::save(const std::string& path) const {
  ensure_built();
  const auto& s = *state_;
  detail::Container c;
  c.header["kind"] = "model";
  c.header["name"] = s.name;
  c.header["architecture"] = s.graph->to_json();
  if (s.compiled) {
    const Optimizer& o = s.compiled->optimizer;
    c.header["compile"] = {{"optimizer",
                            {{"name", o.name},
                             {"learning_rate", o.learning_rate},
                             {"momentum", o.momentum},
                             {"nesterov", o.nesterov},
                             {"rho", o.rho},
                             {"beta_1", o.beta_1},
                             {"beta_2", o.beta_2},
                             {"epsilon", o.epsilon}}},
                           {"loss", detail::loss_name(s.compiled->loss.kind())},
                           {"metrics", s.compiled->metrics}};
    c.header["iterations"] = s.iterations;
    c.header["learning_rate"] = s.learning_rate;
  }
  add_weights(s, get_weights(), c);
  for (size_t k = 0; k < s.optimizer_state.size(); ++k) {
    const auto& slot = s.optimizer_state[k];
    c.sections.push_back({"optimizer/" + std::to_string(k),
                          std::vector<float>(slot.data(), slot.data() + slot.size())});
  }
  detail::write_container(path, std::move(c));
}

Model Model::load(const std::string& path) {
  const auto c = detail::read_container(path, "model");
  std::pair<Node, Node> io;
  try {
    io = detail::Graph::nodes_from_json(c.header.at("architecture"));
  } catch (const json::exception& e) {
    throw FormatError(path, 16, std::string("invalid architecture: ") + e.what());
  }
  Model model(io.first, io.second, c.header.value("name", "model"));
  auto& s = *model.state_;
  model.set_weights(read_weights(s, c, path));
  if (c.header.contains("compile")) {
    try {
      const json& cc = c.header.at("compile");
      const json& oj = cc.at("optimizer");
      Optimizer o;
      o.name = oj.at("name").get<std::string>();
      o.learning_rate = oj.at("learning_rate").get<double>();
      o.momentum = oj.at("momentum").get<double>();
      o.nesterov = oj.at("nesterov").get<bool>();
      o.rho = oj.at("rho").get<double>();
      o.beta_1 = oj.at("beta_1").get<double>();
      o.beta_2 = oj.at("beta_2").get<double>();
      o.epsilon = oj.at("epsilon").get<double>();
      model.compile(o, cc.at("loss").get<std::string>(),
                    cc.at("metrics").get<std::vector<std::string>>());
      s.iterations = c.header.at("iterations").get<int64_t>();
      s.learning_rate = c.header.at("learning_rate").get<double>();
    } catch (const json::exception& e) {
      throw FormatError(path, 16, std::string("invalid compile section: ") + e.what());
    }
    for (size_t k = 0; k < s.optimizer_state.size(); ++k) {
      const auto& values = c.section("optimizer/" + std::to_string(k), path).values;
      if (static_cast<int64_t>(values.size()) != s.optimizer_state[k].size()) {
        throw FormatError(path, 0,
                          "optimizer slot " + std::to_string(k) + " has " +
                              std::to_string(values.size()) + " values, expected " +
                              std::to_string(s.optimizer_state[k].size()));
      }
      std::copy(values.begin(), values.end(), s.optimizer_state[k].data());
    }
  }
  return model;
}

}  // namespace tandem
