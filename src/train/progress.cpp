#include "train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ostream>

namespace tandem::detail {
namespace {

constexpr int kBarWidth = 30;
constexpr double kRedrawSeconds = 0.05;

std::string format_duration(double seconds) {
  char buf[32];
  const int s = static_cast<int>(seconds);
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%d:%02d", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ds", s);
  return buf;
}

std::string format_per_step(double seconds_per_step) {
  char buf[32];
  if (seconds_per_step >= 1)
    std::snprintf(buf, sizeof buf, "%.0fs/step", seconds_per_step);
  else if (seconds_per_step >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.0fms/step", seconds_per_step * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0fus/step", seconds_per_step * 1e6);
  return buf;
}

}  // namespace

std::string format_log_value(double value) {
  char buf[32];
  if (std::abs(value) > 1e-3 || value == 0 || !std::isfinite(value)) {
    std::snprintf(buf, sizeof buf, "%.4f", value);
  } else {
    std::snprintf(buf, sizeof buf, "%.4e", value);
  }
  return buf;
}

bool stdout_is_terminal() {
  return isatty(STDOUT_FILENO) == 1;
}

Progress::Progress(int verbose, int64_t total_steps, std::ostream& out, bool is_terminal)
    : mode_(verbose == 1 ? (is_terminal ? 1 : 2) : (verbose >= 2 ? 2 : 0)),
      total_(total_steps),
      out_(out),
      start_(Clock::now()),
      last_draw_(start_) {}

std::string Progress::values(const Logs& logs) const {
  std::string s;
  // Keras order: loss first, then metrics, then val_*.
  auto add = [&](const std::string& key, double v) {
    s += " - " + key + ": " + format_log_value(v);
  };
  if (auto it = logs.find("loss"); it != logs.end()) add("loss", it->second);
  for (const auto& [k, v] : logs) {
    if (k != "loss" && k.rfind("val_", 0) != 0) add(k, v);
  }
  for (const auto& [k, v] : logs) {
    if (k.rfind("val_", 0) == 0) add(k, v);
  }
  return s;
}

void Progress::update(int64_t step, const Logs& logs) {
  if (mode_ != 1) return;
  const auto now = Clock::now();
  if (step < total_ && std::chrono::duration<double>(now - last_draw_).count() < kRedrawSeconds) {
    return;
  }
  last_draw_ = now;
  const double elapsed = seconds_since(start_);
  const int width = static_cast<int>(std::to_string(total_).size());
  char head[64];
  std::snprintf(head, sizeof head, "%*lld/%lld [", width, static_cast<long long>(step),
                static_cast<long long>(total_));
  std::string bar = head;
  const int filled = static_cast<int>(kBarWidth * step / std::max<int64_t>(total_, 1));
  for (int i = 0; i < kBarWidth; ++i) {
    bar +=
        i < filled - 1 || (i == filled - 1 && step == total_) ? '=' : (i == filled - 1 ? '>' : '.');
  }
  if (filled == 0) bar[bar.size() - kBarWidth] = '>';
  bar += "]";
  const double eta = step > 0 ? elapsed / step * (total_ - step) : 0;
  out_ << "\r" << bar << " - ETA: " << format_duration(eta) << values(logs) << "\x1b[K"
       << std::flush;
}

void Progress::finish(const Logs& logs) {
  if (mode_ == 0) return;
  const double elapsed = seconds_since(start_);
  const std::string per_step = format_per_step(elapsed / std::max<int64_t>(total_, 1));
  if (mode_ == 1) {
    const int width = static_cast<int>(std::to_string(total_).size());
    char head[64];
    std::snprintf(head, sizeof head, "%*lld/%lld [", width, static_cast<long long>(total_),
                  static_cast<long long>(total_));
    out_ << "\r" << head << std::string(kBarWidth, '=') << "] - " << format_duration(elapsed) << " "
         << per_step << values(logs) << "\x1b[K\n"
         << std::flush;
  } else {
    out_ << total_ << "/" << total_ << " - " << format_duration(elapsed) << values(logs) << " - "
         << per_step << "\n"
         << std::flush;
  }
}

}  // namespace tandem::detail
