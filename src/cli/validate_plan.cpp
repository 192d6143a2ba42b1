#include "cli/validate_plan.h"

#include <fmt/core.h>

#include <algorithm>

#include "cli/atomic_write.h"
#include "cli/options.h"
#include "tandem/error.h"

namespace tandem::cli {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t next = text.find(separator, at);
    out.push_back(text.substr(at, next - at));
    if (next == std::string::npos) return out;
    at = next + 1;
  }
}

}  // namespace

std::string ValidationPlan::config_name(const ValidationKind& k) const {
  if (k.ranks > 1) return fmt::format("{} {}", k.ranks, k.name);
  return k.devices == 1 ? std::string(k.name) : fmt::format("{} devices {}", n, k.name);
}

ValidationPlan plan_validation(const ValidateOptions& o, const detail::HardwareProfile& hw,
                               detail::World* world) {
  // Under mpirun: R ranks of one device each against one device; rank 0 measures the latter
  // alone and reports.
  ValidationPlan plan;
  const int ranks = plan.ranks = world != nullptr ? world->size() : 1;
  const bool reporter = plan.reporter = world == nullptr || world->rank() == 0;
  if (ranks > 1 && hw.rank_rank.bandwidth <= 0) {
    throw ConfigError("bench validate: --hardware " + o.hardware +
                      " has no rank_rank link: under mpirun it needs a profile from `mpirun "
                      "-np " +
                      std::to_string(ranks) + " tandem calibrate`");
  }
  if (ranks == 1 && o.devices > hw.max_devices) {
    throw ConfigError(fmt::format("bench validate: --devices {} is more than {}'s max_devices {}",
                                  o.devices, hw.name, hw.max_devices));
  }
  auto& models = plan.models;
  for (const std::string& m : split(o.models, ';')) {
    try {
      std::vector<int64_t> widths = {kImageSize};
      for (int64_t w : parse_layer_widths(m)) widths.push_back(w);
      widths.push_back(kClasses);
      models.push_back(widths);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--models: ") + e.what());
    }
  }
  auto& batches = plan.batches;
  try {
    batches = parse_layer_widths(o.batches);  // whole numbers > 0, comma-separated
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("--batches: ") + e.what());
  }
  const int n = plan.n = ranks > 1 ? 1 : o.devices;
  for (int64_t b : batches) {
    if (b < n * ranks) {
      throw ConfigError(
          fmt::format("--batches: batch {} is smaller than {} devices", b, n * ranks));
    }
  }
  std::vector<double> bucket_sizes;
  if (o.bucket_mb != "none") {
    for (const std::string& text : split(o.bucket_mb, ',')) {
      size_t used = 0;
      double mb = 0;
      try {
        mb = std::stod(text, &used);
      } catch (const std::logic_error&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || !(mb > 0) || mb > 4096) {
        throw ConfigError("--bucket-mb: '" + text +
                          "' is not a size in MB between 0 and 4096 (a list: 1,25; or none)");
      }
      bucket_sizes.push_back(mb);
    }
  }
  if (reporter && !o.json_path.empty()) check_writable(o.json_path);
  constexpr auto mirrored = detail::StrategyKind::mirrored;
  constexpr auto sharded = detail::ReducerKind::sharded;
  auto& kinds = plan.kinds;
  kinds =
      ranks > 1
          ? std::vector<ValidationKind>{{"1 device", 1, mirrored, sharded, false},
                                        {"ranks", 1, mirrored, sharded, false, ranks},
                                        {"ranks bf16", 1, mirrored, sharded, false, ranks, true},
                                        {"ranks deterministic", 1, mirrored, sharded, true, ranks}}
          : std::vector<ValidationKind>{
                {"1 device", 1, mirrored, sharded, false},
                {"mirrored (sharded)", n, mirrored, sharded, false},
                {"mirrored (allreduce)", n, mirrored, detail::ReducerKind::allreduce, false},
                {"mirrored deterministic", n, mirrored, sharded, true},
                {"host", n, detail::StrategyKind::host, sharded, false}};
  // Each bucket size beside the default it is compared with (the advice's choice).
  for (double mb : bucket_sizes) {
    const std::string size = fmt::format(" {:g} MB buckets", mb);
    if (ranks > 1) {
      kinds.push_back({"ranks" + size, 1, mirrored, sharded, false, ranks, false, mb});
    } else {
      kinds.push_back({"mirrored (allreduce)" + size, n, mirrored, detail::ReducerKind::allreduce,
                       false, 1, false, mb});
    }
  }

  // One device only, at rows no configuration uses: the runs each model's rate curve is
  // measured again from, interleaved with its configurations so that the machine's drift
  // over minutes (the same 1-device step measured 20-25% apart a few minutes later) is
  // common to both.
  auto& calibration_rows = plan.calibration_rows;
  if (o.calibration_rows != "none") {
    try {
      calibration_rows = parse_layer_widths(o.calibration_rows);  // whole numbers > 0
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--calibration-rows: ") + e.what());
    }
    std::vector<int64_t> distinct = calibration_rows;
    std::sort(distinct.begin(), distinct.end());
    if (std::unique(distinct.begin(), distinct.end()) - distinct.begin() < 2) {
      throw ConfigError(
          "--calibration-rows needs at least two different row counts (a line is fitted "
          "through them), or none");
    }
  }
  return plan;
}

}  // namespace tandem::cli
