// Model::summary: Keras's table (layer, type, output shape, params; totals). Graphs that are
// not a plain chain get Keras's extra "Connected to" column.
#include <ostream>
#include <sstream>

#include "model/model_state.h"
#include "tandem/model.h"

namespace tandem {
namespace {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void print_row(std::ostream& out, const std::vector<std::string>& fields,
               const std::vector<int>& positions) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    line += " " + fields[i];
    const size_t end = static_cast<size_t>(positions[i]);
    if (line.size() > end - 1) line = line.substr(0, end - 1);
    line.resize(end, ' ');
  }
  out << line << "\n";
}

}  // namespace

void Model::summary(std::ostream& out) const {
  ensure_built();
  const auto& g = *state_->graph;
  const bool chain = g.is_chain();
  const int width = chain ? 65 : 98;
  const std::vector<int> positions =
      chain ? std::vector<int>{29, 55, 65} : std::vector<int>{29, 58, 68, 98};
  std::vector<std::string> header = {"Layer (type)", "Output Shape", "Param #"};
  if (!chain) header.push_back("Connected to");

  out << "Model: \"" << state_->name << "\"\n" << std::string(width, '_') << "\n";
  print_row(out, header, positions);
  out << std::string(width, '=') << "\n";
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& node = nodes[i];
    const auto& layer = g.layers()[node.layer_index];
    int64_t params = 0;
    for (int p : layer.params) params += g.params()[p].size;
    const std::string shape = layer.layer->is_input()
                                  ? "[" + batch_shape_to_string(node.shape) + "]"
                                  : batch_shape_to_string(node.shape);
    std::vector<std::string> fields = {layer.layer->name + " (" + layer.layer->type() + ")", shape,
                                       std::to_string(params)};
    if (!chain) {
      std::string connected;
      for (int in : node.inputs) {
        if (!connected.empty()) connected += ", ";
        connected += "[" + g.layers()[nodes[in].layer_index].layer->name + "]";
      }
      fields.push_back(connected);
    }
    print_row(out, fields, positions);
    out << (i + 1 < nodes.size() ? std::string(width, ' ') + "\n" : "");
  }
  out << std::string(width, '=') << "\n";
  int64_t frozen = 0;  // moving statistics (BatchNormalization)
  for (const detail::ParamEntry& e : g.params()) frozen += e.spec.trainable ? 0 : e.size;
  out << "Total params: " << with_commas(g.param_count()) << "\n";
  out << "Trainable params: " << with_commas(g.param_count() - frozen) << "\n";
  out << "Non-trainable params: " << with_commas(frozen) << "\n" << std::string(width, '_') << "\n";
}

std::string Model::summary_string() const {
  std::ostringstream s;
  summary(s);
  return s.str();
}

}  // namespace tandem
