#include "report/scaling_report.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "core/input_file.h"
#include "report/svg_chart.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

const std::vector<std::string> kPhaseOrder = {"data",      "forward",   "loss", "backward",
                                              "allreduce", "optimizer", "idle"};

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, sep)) out.push_back(cell);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

std::string speedup_svg(const ScalingReport& r) {
  LineChart chart{"Speedup vs devices (global batch " + std::to_string(r.batch) + ")",
                  "devices",
                  "speedup over 1 device",
                  {},
                  true};
  std::set<std::string> strategies;
  int most = 1;
  for (const auto& c : r.configs) {
    if (c.devices > 1) strategies.insert(c.strategy);
    most = std::max(most, c.devices);
  }
  size_t color = 0;
  for (const auto& s : strategies) {
    Series measured{s + " measured", chart_color(color), {{1, 1}}};
    Series predicted{s + " predicted", chart_color(color), {{1, 1}}, true};
    for (const auto& c : r.configs) {
      if (c.strategy != s || c.devices == 1) continue;
      measured.points.emplace_back(c.devices, c.speedup);
      if (!std::isnan(c.predicted_speedup))
        predicted.points.emplace_back(c.devices, c.predicted_speedup);
    }
    chart.series.push_back(measured);
    if (predicted.points.size() > 1) chart.series.push_back(predicted);
    ++color;
  }
  chart.series.push_back({"ideal", "#999999", {{1, 1}, {most, most}}, true});
  return svg_line_chart(chart);
}

std::string breakdown_svg(const ScalingReport& r) {
  StackedBars bars{"Time per step by phase (per device)", "ms", {}, kPhaseOrder, {}, {}};
  for (size_t k = 0; k < kPhaseOrder.size(); ++k) bars.colors.push_back(chart_color(k));
  for (const auto& c : r.configs) {
    bars.categories.push_back(c.name);
    std::vector<double> row;
    for (const auto& p : kPhaseOrder) {
      const auto it = c.phase_ms.find(p);
      row.push_back(it == c.phase_ms.end() ? 0 : it->second);
    }
    bars.values.push_back(row);
  }
  return svg_stacked_bars(bars, std::max(640, 130 * static_cast<int>(r.configs.size()) + 220));
}

std::string curve_svg(const TrainingCurve& curve, const std::vector<std::string>& keys,
                      const std::string& y_label) {
  LineChart chart{"Training curves: " + curve.name, "epoch", y_label, {}, true};
  size_t color = 0;
  for (const auto& key : keys) {
    const auto it = curve.series.find(key);
    if (it == curve.series.end()) continue;
    Series s{key, chart_color(color++), {}, key.rfind("val_", 0) == 0};
    for (size_t e = 0; e < it->second.size(); ++e) s.points.emplace_back(e + 1, it->second[e]);
    chart.series.push_back(s);
  }
  return chart.series.empty() ? "" : svg_line_chart(chart);
}

}  // namespace

std::string report_text(const ScalingReport& r) {
  std::string out = r.title + ": " + r.model + ", global batch " + std::to_string(r.batch) +
                    (r.hardware.empty() ? "" : ", predicted with " + r.hardware) + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %9s %9s %9s %9s |", "config", "ms/step", "speedup",
                "predicted", "error");
  out += line;
  for (const auto& p : kPhaseOrder) {
    std::snprintf(line, sizeof line, " %9s", p.c_str());
    out += line;
  }
  out += "\n";
  for (const auto& c : r.configs) {
    const double error = c.predicted_speedup / c.speedup - 1;
    std::snprintf(line, sizeof line, "%-24s %9.2f %8.2fx %8sx %8s%% |", c.name.c_str(),
                  c.ms_per_step, c.speedup, fixed(c.predicted_speedup, 2).c_str(),
                  fixed(100 * error, 1).c_str());
    out += line;
    for (const auto& p : kPhaseOrder) {
      const auto it = c.phase_ms.find(p);
      std::snprintf(line, sizeof line, " %9.2f", it == c.phase_ms.end() ? 0.0 : it->second);
      out += line;
    }
    out += "\n";
  }
  for (const auto& n : r.notes) out += "- " + n + "\n";
  return out;
}

std::string report_html(const ScalingReport& r) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
      xml_escape(r.title) +
      "</title>\n<style>\nbody{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
      "\ntable{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
      "text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}"
      "\nfigure{margin:1.5em 0}\n</style>\n</head>\n<body>\n<h1>" +
      xml_escape(r.title) + "</h1>\n<p>Model: " + xml_escape(r.model) + ". Global batch " +
      std::to_string(r.batch) + "." +
      (r.hardware.empty()
           ? ""
           : " Predictions: cost model, hardware profile " + xml_escape(r.hardware) + ".") +
      "</p>\n";
  if (!r.notes.empty()) {
    h += "<h2>What limits scaling</h2>\n<ul>\n";
    for (const auto& n : r.notes) h += "<li>" + xml_escape(n) + "</li>\n";
    h += "</ul>\n";
  }
  h += "<h2>Configurations</h2>\n<table>\n<tr><th>config</th><th>ms/step</th><th>speedup</th>"
       "<th>predicted</th><th>error</th>";
  for (const auto& p : kPhaseOrder) h += "<th>" + p + " ms</th>";
  h += "</tr>\n";
  for (const auto& c : r.configs) {
    h += "<tr><td>" + xml_escape(c.name) + "</td><td>" + fixed(c.ms_per_step, 2) + "</td><td>" +
         fixed(c.speedup, 2) + "x</td><td>" + fixed(c.predicted_speedup, 2) + "x</td><td>" +
         fixed(100 * (c.predicted_speedup / c.speedup - 1), 1) + "%</td>";
    for (const auto& p : kPhaseOrder) {
      const auto it = c.phase_ms.find(p);
      h += "<td>" + fixed(it == c.phase_ms.end() ? 0.0 : it->second, 2) + "</td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n<figure>\n" + speedup_svg(r) + "</figure>\n<figure>\n" + breakdown_svg(r) +
       "</figure>\n";
  for (const auto& curve : r.curves) {
    h += "<h2>Training: " + xml_escape(curve.name) + "</h2>\n<figure>\n" +
         curve_svg(curve, {"loss", "val_loss"}, "loss") + "</figure>\n<figure>\n" +
         curve_svg(curve, {"accuracy", "val_accuracy"}, "accuracy") + "</figure>\n";
  }
  return h + "</body>\n</html>\n";
}

namespace {

// Histories are a line per epoch: 64 MiB is far beyond any, and keeps a wrong path (a
// dataset, a model file) from being read whole.
constexpr uint64_t kMaxHistoryBytes = 64 * kMiB;
// A metric beyond this is no value to plot: the chart's axis arithmetic needs |v| + 1 to
// differ from |v| in a double, with room to spare.
constexpr double kMaxMetric = 1e12;

// A finite number, the whole cell (surrounding blanks allowed), or nothing.
std::optional<double> parse_number(const std::string& cell) {
  const char* begin = cell.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE) return std::nullopt;
  while (*end == ' ' || *end == '\t' || *end == '\r') ++end;
  if (*end != '\0' || end != begin + cell.size()) return std::nullopt;
  if (!std::isfinite(v) || std::abs(v) > kMaxMetric) return std::nullopt;
  return v;
}

TrainingCurve read_metrics_json(const std::string& text, const std::string& path) {
  TrainingCurve curve;
  curve.name = path;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path, 0, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("epochs") || !j.at("epochs").is_array()) {
    throw FormatError(path, 0, "not a tandem --metrics-json report (no epochs list)");
  }
  size_t index = 0;
  for (const auto& epoch : j.at("epochs")) {
    if (!epoch.is_object()) {
      throw FormatError(path, 0, "epochs[" + std::to_string(index) + "] is not an object");
    }
    for (const auto& [k, v] : epoch.items()) {
      if (k == "epoch" || k == "seconds" || !v.is_number()) continue;
      const double value = v.get<double>();
      if (!std::isfinite(value) || std::abs(value) > kMaxMetric) {
        throw FormatError(path, 0,
                          "epochs[" + std::to_string(index) + "]." + k + " = " + v.dump() +
                              " is out of range for a metric");
      }
      curve.series[k].push_back(value);
    }
    ++index;
  }
  return curve;
}

}  // namespace

TrainingCurve read_training_curve(const std::string& path) {
  const std::string text = read_regular_file(path, kMaxHistoryBytes, "training history");
  const auto start = text.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && text[start] == '{') return read_metrics_json(text, path);
  TrainingCurve curve;
  curve.name = path;
  // CSVLogger: a header "epoch,accuracy,loss,..." then one row per epoch.
  std::stringstream in(text);
  std::string line;
  std::getline(in, line);
  int64_t offset = static_cast<int64_t>(line.size()) + 1;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const auto columns = split(line, ',');
  if (columns.empty() || columns.front() != "epoch") {
    throw FormatError(path, 0,
                      "neither a --metrics-json report nor a CSVLogger file (no epoch column)");
  }
  std::set<std::string> seen;
  for (const auto& column : columns) {
    if (column.empty() || !seen.insert(column).second) {
      throw FormatError(path, 0,
                        column.empty() ? "the CSV header has an empty column name"
                                       : "the CSV header names column '" + column + "' twice");
    }
  }
  while (std::getline(in, line)) {
    const int64_t line_size = static_cast<int64_t>(line.size()) + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      offset += line_size;
      continue;
    }
    const auto cells = split(line, ',');
    if (cells.size() != columns.size()) {
      throw FormatError(path, offset,
                        "row has " + std::to_string(cells.size()) + " cells, the header " +
                            std::to_string(columns.size()));
    }
    for (size_t k = 1; k < cells.size(); ++k) {
      const std::optional<double> v = parse_number(cells[k]);
      if (!v) {
        throw FormatError(path, offset,
                          "'" + cells[k].substr(0, 40) + "' is not a number (finite, |x| <= 1e12)");
      }
      curve.series[columns[k]].push_back(*v);
    }
    offset += line_size;
  }
  return curve;
}

}  // namespace tandem::detail
