#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tandem::detail {
namespace {

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

std::string label(double v) {
  char text[32];
  if (std::fabs(v) >= 100 || v == std::floor(v)) {
    std::snprintf(text, sizeof text, "%.0f", v);
  } else {
    std::snprintf(text, sizeof text, "%.3g", v);
  }
  return text;
}

// About `count` round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int count, bool integer) {
  if (!(hi > lo)) hi = lo + 1;
  double step = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(step)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= step) {
      step = m * magnitude;
      break;
    }
  }
  if (integer) step = std::max(1.0, std::round(step));
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step) out.push_back(t);
  return out;
}

struct Frame {
  int width, height;
  double left = 64, right = 20, top = 40, bottom = 52;
  double x0, x1, y0, y1;  // data ranges
  double px(double x) const { return left + (x - x0) / (x1 - x0) * (width - left - right); }
  double py(double y) const {
    return height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom);
  }
};

std::string header(int width, int height, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
         "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) +
         " " + std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n<title>" +
         xml_escape(title) +
         "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"" +
         std::to_string(width / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" +
         xml_escape(title) + "</text>\n";
}

std::string axes(const Frame& f, const std::vector<double>& xt, const std::vector<double>& yt,
                 const std::string& x_label, const std::string& y_label) {
  std::string s;
  for (double y : yt) {
    s += "<line x1=\"" + num(f.left) + "\" x2=\"" + num(f.width - f.right) + "\" y1=\"" +
         num(f.py(y)) + "\" y2=\"" + num(f.py(y)) + "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + num(f.left - 6) + "\" y=\"" + num(f.py(y) + 4) + "\" text-anchor=\"end\">" +
         label(y) + "</text>\n";
  }
  for (double x : xt) {
    s += "<text x=\"" + num(f.px(x)) + "\" y=\"" + num(f.height - f.bottom + 16) +
         "\" text-anchor=\"middle\">" + label(x) + "</text>\n";
  }
  s += "<line x1=\"" + num(f.left) + "\" x2=\"" + num(f.width - f.right) + "\" y1=\"" +
       num(f.height - f.bottom) + "\" y2=\"" + num(f.height - f.bottom) + "\" stroke=\"#333\"/>\n";
  s += "<line x1=\"" + num(f.left) + "\" x2=\"" + num(f.left) + "\" y1=\"" + num(f.top) +
       "\" y2=\"" + num(f.height - f.bottom) + "\" stroke=\"#333\"/>\n";
  s += "<text x=\"" + num((f.left + f.width - f.right) / 2) + "\" y=\"" + num(f.height - 12) +
       "\" text-anchor=\"middle\">" + xml_escape(x_label) + "</text>\n";
  s += "<text transform=\"translate(16," + num((f.top + f.height - f.bottom) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + xml_escape(y_label) + "</text>\n";
  return s;
}

std::string legend(double x, double y, const std::vector<std::string>& names,
                   const std::vector<std::string>& colors) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    const double row = y + 16.0 * static_cast<double>(i);
    s += "<rect x=\"" + num(x) + "\" y=\"" + num(row - 9) +
         "\" width=\"12\" height=\"10\" fill=\"" + colors[i] + "\"/>\n<text x=\"" + num(x + 16) +
         "\" y=\"" + num(row) + "\">" + xml_escape(names[i]) + "</text>\n";
  }
  return s;
}

}  // namespace

const std::string& chart_color(size_t i) {
  static const std::vector<std::string> palette = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                                   "#bcbd22", "#17becf"};
  return palette[i % palette.size()];
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string svg_line_chart(const LineChart& c, int width, int height) {
  Frame f{width, height};
  double x0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY, y0 = INFINITY;
  for (const auto& s : c.series) {
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  y0 = std::min(0.0, y0);
  if (x1 == x0) x1 = x0 + 1;
  y1 = y1 > y0 ? y1 * 1.08 : y0 + 1;
  f.x0 = x0, f.x1 = x1, f.y0 = y0, f.y1 = y1;
  std::string s = header(width, height, c.title);
  s += axes(f, ticks(x0, x1, 6, c.integer_x), ticks(y0, y1, 5, false), c.x_label, c.y_label);
  std::vector<std::string> names, colors;
  for (const auto& series : c.series) {
    names.push_back(series.name);
    colors.push_back(series.color);
    if (!series.markers_only && series.points.size() > 1) {
      std::string path;
      for (const auto& [x, y] : series.points) {
        path += (path.empty() ? "" : " ") + num(f.px(x)) + "," + num(f.py(y));
      }
      s += "<polyline fill=\"none\" stroke=\"" + series.color + "\" stroke-width=\"2\"" +
           (series.dashed ? " stroke-dasharray=\"6,4\"" : "") + " points=\"" + path + "\"/>\n";
    }
    for (const auto& [x, y] : series.points) {
      s += "<circle cx=\"" + num(f.px(x)) + "\" cy=\"" + num(f.py(y)) + "\" r=\"" +
           (series.markers_only ? "5" : "3") + "\" fill=\"" + series.color + "\"><title>" +
           xml_escape(series.name) + ": " + label(x) + ", " + label(y) + "</title></circle>\n";
    }
  }
  s += legend(f.left + 12, f.top + 12, names, colors);
  return s + "</svg>\n";
}

std::string svg_stacked_bars(const StackedBars& c, int width, int height) {
  Frame f{width, height};
  f.right = 150;  // the legend
  double most = 0;
  for (const auto& row : c.values) {
    double sum = 0;
    for (double v : row) sum += std::max(0.0, v);
    most = std::max(most, sum);
  }
  f.x0 = 0, f.x1 = std::max<double>(1, static_cast<double>(c.categories.size()));
  f.y0 = 0, f.y1 = most > 0 ? most * 1.08 : 1;
  std::string s = header(width, height, c.title);
  s += axes(f, {}, ticks(f.y0, f.y1, 5, false), "", c.y_label);
  const double slot = (width - f.left - f.right) / f.x1;
  for (size_t i = 0; i < c.categories.size(); ++i) {
    double base = 0;
    const double x = f.left + slot * static_cast<double>(i) + slot * 0.15;
    for (size_t k = 0; k < c.segments.size() && k < c.values[i].size(); ++k) {
      const double v = std::max(0.0, c.values[i][k]);
      if (v <= 0) continue;
      s += "<rect x=\"" + num(x) + "\" y=\"" + num(f.py(base + v)) + "\" width=\"" +
           num(slot * 0.7) + "\" height=\"" + num(f.py(base) - f.py(base + v)) + "\" fill=\"" +
           c.colors[k] + "\"><title>" +
           xml_escape(c.categories[i] + ": " + c.segments[k] + " " + label(v)) +
           "</title></rect>\n";
      base += v;
    }
    s += "<text x=\"" + num(x + slot * 0.35) + "\" y=\"" + num(f.height - f.bottom + 16) +
         "\" text-anchor=\"middle\">" + xml_escape(c.categories[i]) + "</text>\n";
  }
  std::vector<std::string> names(c.segments.rbegin(), c.segments.rend());
  std::vector<std::string> colors(c.colors.rbegin(), c.colors.rend());
  s += legend(width - f.right + 14, f.top + 12, names, colors);
  return s + "</svg>\n";
}

}  // namespace tandem::detail
