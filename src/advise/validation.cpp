#include "advise/validation.h"

#include <fmt/core.h>

#include <cmath>

namespace tandem::detail {
namespace {

bool speedup_missed(const ValidationRow& r, const Tolerances& t) {
  return r.devices > 1 && !(std::abs(r.speedup_error()) <= t.speedup);
}

bool step_missed(const ValidationRow& r, const Tolerances& t) {
  return !(std::abs(r.step_error()) <= t.step);
}

}  // namespace

bool validation_missed(const ValidationRow& r, const Tolerances& t) {
  return speedup_missed(r, t) || step_missed(r, t);
}

std::vector<std::string> validation_misses(const std::vector<ValidationRow>& rows,
                                           const Tolerances& t) {
  std::vector<std::string> out;
  for (const ValidationRow& r : rows) {
    const std::string what = fmt::format("{}, batch {}, {}", r.model, r.batch, r.config);
    if (speedup_missed(r, t)) {
      out.push_back(fmt::format(
          "{}: speedup predicted {:.2f}x, measured {:.2f}x ({:+.1f}%, "
          "tolerance {:.0f}%)",
          what, r.predicted_speedup, r.measured_speedup, 100 * r.speedup_error(), 100 * t.speedup));
    }
    if (step_missed(r, t)) {
      out.push_back(
          fmt::format("{}: step predicted {:.2f} ms, measured {:.2f} ms ({:+.1f}%, "
                      "tolerance {:.0f}%)",
                      what, 1e3 * r.predicted_seconds, 1e3 * r.measured_seconds,
                      100 * r.step_error(), 100 * t.step));
    }
  }
  return out;
}

std::string validation_table(const std::vector<ValidationRow>& rows, const Tolerances& t) {
  std::string out =
      fmt::format("{:<38} {:>6} {:<32} {:>10} {:>10} {:>7} {:>8} {:>8} {:>7}\n", "model", "batch",
                  "config", "pred ms", "meas ms", "error", "pred x", "meas x", "error");
  for (const ValidationRow& r : rows) {
    const bool miss = validation_missed(r, t);
    out +=
        fmt::format("{:<38} {:>6} {:<32} {:>10.2f} {:>10.2f} {:>+6.1f}% {:>7.2f}x {:>7.2f}x ",
                    r.model, r.batch, r.config, 1e3 * r.predicted_seconds, 1e3 * r.measured_seconds,
                    100 * r.step_error(), r.predicted_speedup, r.measured_speedup);
    out += r.devices > 1 ? fmt::format("{:>+6.1f}%", 100 * r.speedup_error())
                         : fmt::format("{:>7}", "-");
    out += miss ? "  MISS\n" : "\n";
  }
  return out;
}

}  // namespace tandem::detail
