// Self-contained SVG charts for the scaling report and the docs: a line chart (speedup vs
// devices, training curves) and a stacked bar chart (time per step by phase). Plain SVG
// 1.1 text, no scripts, no external fonts or styles.
#pragma once

#include <string>
#include <vector>

namespace tandem::detail {

struct Series {
  std::string name;
  std::string color;  // "#1f77b4"
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
  bool markers_only = false;  // a point for a single measurement
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool integer_x = false;  // ticks on whole numbers (device counts, epochs)
};

struct StackedBars {
  std::string title, y_label;
  std::vector<std::string> categories;      // one bar each
  std::vector<std::string> segments;        // phases, bottom to top
  std::vector<std::string> colors;          // per segment
  std::vector<std::vector<double>> values;  // [category][segment]
};

std::string svg_line_chart(const LineChart& chart, int width = 640, int height = 380);
std::string svg_stacked_bars(const StackedBars& chart, int width = 640, int height = 380);
// A palette of distinguishable colours (10, then repeats).
const std::string& chart_color(size_t i);
// XML text escaping.
std::string xml_escape(const std::string& text);

}  // namespace tandem::detail
