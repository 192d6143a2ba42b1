#include <fmt/core.h>
#include <fmt/ranges.h>

#include <atomic>
#include <cmath>

#include "advise/hardware_profile.h"
#include "advise/profile_fields.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

std::atomic<double> apart_times{kApartHandoff};
std::atomic<int> wait_polls{static_cast<int>(kQuietWaitSeconds / kQuietPollSeconds)};

}  // namespace

double apart_handoff() {
  return apart_times.load();
}

void set_apart_handoff(double times) {
  if (!(times >= 1 && times <= 1e6)) {
    throw ConfigError("--apart-handoff: a hand-off is apart at 1 or more times the fastest, got " +
                      std::to_string(times));
  }
  apart_times.store(times);
}

int quiet_wait_polls() {
  return wait_polls.load();
}

void set_quiet_wait(double seconds) {
  if (!(seconds >= 0 && seconds <= 3600)) {
    throw ConfigError("--quiet-wait: seconds from 0 to 3600 to wait for a quiet window, got " +
                      std::to_string(seconds));
  }
  // Whole polls within the seconds: a wait never longer than asked.
  wait_polls.store(static_cast<int>(std::floor(seconds / kQuietPollSeconds)));
}

bool ProbeWindow::disturbed() const {
  return recorded() &&
         ((best_handoff > 0 && handoff > apart_handoff() * best_handoff) || steal > kQuietSteal);
}

std::string ProbeWindow::words() const {
  if (!recorded()) return "not recorded";
  const std::string waited =
      waits > 0 ? fmt::format(" after {:.2f} s waiting for quiet", waits * kQuietPollSeconds) : "";
  const std::string cached =
      best_cache <= 0 ? ""
      : crowded < 0
          ? fmt::format("; cache {:.1f} us (fastest {:.1f} us)", cache * 1e6, best_cache * 1e6)
          : fmt::format("; cache {:.1f} us (fastest {:.1f} us), {} of {} crowded", cache * 1e6,
                        best_cache * 1e6, crowded, kept);
  return fmt::format(
      "{} unit{}, {} timed again{}; hand-off {:.0f} ns (fastest {:.0f} ns), steal "
      "{:.1f}%{}{}",
      kept, kept == 1 ? "" : "s", redone, waited, handoff * 1e9, best_handoff * 1e9, steal * 100,
      disturbed() ? ": the cores were apart or taken" : "", cached);
}

nlohmann::json probe_window_json(const ProbeWindow& w) {
  nlohmann::json j = {{"kept", w.kept},
                      {"redone", w.redone},
                      {"handoff", w.handoff},
                      {"steal", w.steal},
                      {"best_handoff", w.best_handoff},
                      {"waits", w.waits}};
  if (w.best_cache > 0) {
    j["cache"] = w.cache;
    j["best_cache"] = w.best_cache;
    if (w.crowded >= 0) j["crowded"] = w.crowded;
  }
  return j;
}

ProbeWindow read_probe_window(const nlohmann::json& j, const std::string& where) {
  const std::string at = where + ": window";
  if (!j.is_object()) {
    throw ConfigError(at +
                      " must be an object of kept, redone, handoff, steal, best_handoff and "
                      "(optional) waits, cache, best_cache and crowded");
  }
  ProbeWindow w;
  check_whole_number(j, "kept", at, 1e9, true);
  w.kept = j.at("kept").get<int>();
  if (!j.contains("redone") || !j.at("redone").is_number_integer() ||
      j.at("redone").get<int64_t>() < 0 || j.at("redone").get<int64_t>() > w.kept) {
    throw ConfigError(at + " needs 'redone', a whole number from 0 to kept (" +
                      std::to_string(w.kept) + ")");
  }
  w.redone = j.at("redone").get<int>();
  w.handoff = positive_field(j, "handoff", at);
  w.best_handoff = positive_field(j, "best_handoff", at);
  if (w.handoff < w.best_handoff) {
    throw ConfigError(at + ": 'handoff' is less than 'best_handoff', the fastest measured");
  }
  if (!j.contains("steal")) throw ConfigError(at + " needs 'steal', a share from 0 to 1");
  w.steal = non_negative_field(j, "steal", at, 0);
  if (w.steal > 1) throw ConfigError(at + ": 'steal' must be a share from 0 to 1");
  if (j.contains("waits")) {
    const nlohmann::json& v = j.at("waits");
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1000000000) {
      throw ConfigError(at + ": 'waits' must be a whole number from 0, got " + v.dump());
    }
    w.waits = v.get<int>();
    if (w.waits > 0 && w.redone == 0) {
      throw ConfigError(at + ": 'waits' " + std::to_string(w.waits) +
                        " with 'redone' 0: a probe waits only before timing a unit again");
    }
  }
  if (j.contains("cache") != j.contains("best_cache")) {
    throw ConfigError(at + " needs both 'cache' and 'best_cache' or neither");
  }
  if (j.contains("crowded") && !j.contains("cache")) {
    throw ConfigError(at + ": 'crowded' without 'cache' and 'best_cache'");
  }
  if (j.contains("cache")) {
    w.cache = positive_field(j, "cache", at);
    w.best_cache = positive_field(j, "best_cache", at);
    if (w.cache < w.best_cache) {
      throw ConfigError(at + ": 'cache' is less than 'best_cache', the fastest measured");
    }
  }
  if (j.contains("crowded")) {
    const nlohmann::json& v = j.at("crowded");
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > w.kept) {
      throw ConfigError(at + ": 'crowded' must be a whole number from 0 to kept (" +
                        std::to_string(w.kept) + "), got " + v.dump());
    }
    w.crowded = v.get<int>();
  }
  return w;
}

std::vector<std::string> disturbed_windows(const HardwareProfile& hw) {
  // Each recorded window with its device count and what it timed.
  struct Named {
    int devices;
    std::string what;
    ProbeWindow window;
  };
  std::vector<Named> windows;
  if (hw.device.update_contention_window.recorded()) {
    windows.push_back(
        {hw.device.update_contention_devices,
         fmt::format("the update on {} devices at once (device.update_contention_window)",
                     hw.device.update_contention_devices),
         hw.device.update_contention_window});
  }
  for (const DenseRateCurve& c : hw.device.dense_rates) {
    for (const WeightGradShards& w : c.weight_grad_gemms) {
      if (!w.at_once_window.recorded()) continue;
      windows.push_back(
          {w.devices,
           fmt::format("the steps of {} on {} devices at once (its dense_rates entry's "
                       "weight_grad_gemms window)",
                       fmt::join(c.widths, "-"), w.devices),
           w.at_once_window});
    }
  }
  std::vector<std::string> out;
  for (Named& n : windows) {
    // Against the fastest of every probe on as many devices (another count's devices may sit
    // on cores further apart).
    for (const Named& other : windows) {
      if (other.devices == n.devices) {
        n.window.best_handoff = std::min(n.window.best_handoff, other.window.best_handoff);
      }
    }
    if (n.window.disturbed()) out.push_back(n.what + ": " + n.window.words());
  }
  return out;
}

}  // namespace tandem::detail
