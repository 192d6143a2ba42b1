#include "train/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ostream>

#include "core/atomic_file.h"
#include "model/container.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".tandem";

json history_json(const History& h) {
  return {{"epoch", h.epoch}, {"history", h.history}};
}

History history_from(const json& j) {
  History h;
  h.epoch = j.at("epoch").get<std::vector<int>>();
  h.history = j.at("history").get<std::map<std::string, std::vector<double>>>();
  return h;
}

// The progress fields read as integers must be integers in the file: a float there (1e300)
// would be converted with undefined behaviour before any range check could see it.
void check_whole_numbers(const json& header, const std::string& path) {
  auto whole = [&](const json& parent, const char* key, const std::string& where) {
    if (!parent.is_object() || !parent.contains(key)) return;  // absent: reported when read
    if (!parent.at(key).is_number_integer()) {
      throw FormatError(path, 16,
                        "checkpoint field " + where + key + " must be a whole number, got " +
                            parent.at(key).dump().substr(0, 40));
    }
  };
  whole(header, "iterations", "");
  if (!header.contains("progress")) return;
  const json& progress = header.at("progress");
  for (const char* key : {"epoch", "step", "global_step", "seed", "samples"}) {
    whole(progress, key, "progress.");
  }
  if (progress.is_object() && progress.contains("history") && progress.at("history").is_object()) {
    const json& history = progress.at("history");
    if (history.contains("epoch") && history.at("epoch").is_array()) {
      for (const json& e : history.at("epoch")) {
        if (!e.is_number_integer()) {
          throw FormatError(
              path, 16,
              "checkpoint history epochs must be whole numbers, got " + e.dump().substr(0, 40));
        }
      }
    }
  }
}

// The global step in a checkpoint's file name, or -1 when it is not one.
int64_t step_of(const fs::path& p) {
  const std::string name = p.filename().string();
  const size_t pre = std::string(kPrefix).size(), suf = std::string(kSuffix).size();
  if (name.size() <= pre + suf || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - suf, suf, kSuffix) != 0) {
    return -1;
  }
  const std::string digits = name.substr(pre, name.size() - pre - suf);
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::stoll(digits);
}

}  // namespace

json fit_identity(const ModelState& model, int64_t batch_size, int64_t samples,
                  const DataFingerprints& data, bool shuffle, const RunChoices& run) {
  json identity = {{"architecture", model.graph->to_json()},
                   {"batch_size", batch_size},
                   {"samples", samples},
                   {"x_fingerprint", data.x},
                   {"y_fingerprint", data.y},
                   {"shuffle", shuffle},
                   {"strategy", name_of(run.strategy)},
                   {"reducer", name_of(run.reducer)},
                   {"deterministic", run.deterministic},
                   {"seed", run.seed ? json(*run.seed) : json(nullptr)}};
  if (model.compiled) {
    // As compiled: a LearningRateScheduler's changes during the run are not a difference.
    const Optimizer& o = model.compiled->optimizer;
    identity["optimizer"] = o.name;
    identity["learning_rate"] = o.learning_rate;
    identity["momentum"] = o.momentum;
    identity["nesterov"] = o.nesterov;
    identity["rho"] = o.rho;
    identity["beta_1"] = o.beta_1;
    identity["beta_2"] = o.beta_2;
    identity["epsilon"] = o.epsilon;
  }
  return identity;
}

const std::vector<std::string>& overridable_fields() {
  static const std::vector<std::string> fields = {
      "batch_size", "samples",       "x_fingerprint", "y_fingerprint", "shuffle",       "strategy",
      "reducer",    "deterministic", "seed",          "optimizer",     "learning_rate", "momentum",
      "nesterov",   "rho",           "beta_1",        "beta_2",        "epsilon"};
  return fields;
}

std::string encode_checkpoint(const ModelState& model, const FitProgress& p, const json& identity) {
  Container c;
  c.header["kind"] = "checkpoint";
  c.header["identity"] = identity;
  c.header["iterations"] = model.iterations;
  c.header["learning_rate"] = model.learning_rate;
  c.header["progress"] = {{"epoch", p.epoch},
                          {"step", p.step},
                          {"global_step", p.global_step},
                          {"seed", p.seed},
                          {"loss_sum", p.epoch_totals.loss_sum},
                          {"correct_sum", p.epoch_totals.correct_sum},
                          {"samples", p.epoch_totals.samples},
                          {"history", history_json(p.history)}};
  c.sections.push_back({"params", std::vector<float>(model.params.data(),
                                                     model.params.data() + model.params.size())});
  for (size_t k = 0; k < model.optimizer_state.size(); ++k) {
    const auto& slot = model.optimizer_state[k];
    c.sections.push_back({"optimizer/" + std::to_string(k),
                          std::vector<float>(slot.data(), slot.data() + slot.size())});
  }
  return encode_container(std::move(c));
}

void decode_checkpoint(const std::string& bytes, const std::string& path, ModelState& model,
                       FitProgress& p, const json& identity,
                       const std::vector<std::string>& overrides) {
  const Container c = decode_container(bytes, path, "checkpoint");
  json stored;
  try {
    stored = c.header.at("identity");
  } catch (const json::exception& e) {
    throw FormatError(path, 16, std::string("checkpoint header lacks its identity: ") + e.what());
  }
  for (const std::string& field : overrides) {
    const auto& allowed = overridable_fields();
    if (std::find(allowed.begin(), allowed.end(), field) == allowed.end()) {
      std::string known;
      for (const auto& f : allowed) known += (known.empty() ? "" : ", ") + f;
      throw ConfigError("resume override '" + field + "': not a field a resume may change (" +
                        known + ")");
    }
  }
  std::vector<std::string> differences;
  for (const auto& [key, value] : identity.items()) {
    const json was = stored.contains(key) ? stored.at(key) : json("(absent)");
    if (was == value) continue;
    if (key == "seed" && (was.is_null() || value.is_null())) continue;  // one run left it open
    if (std::find(overrides.begin(), overrides.end(), key) != overrides.end()) continue;
    const std::string there = was.dump(), here = value.dump();
    differences.push_back(
        "its " + key + " differs from this run's" +
        (there.size() < 80 && here.size() < 80 ? " (" + there + " there, " + here + " here)" : ""));
  }
  if (!differences.empty()) {
    std::string list;
    for (const auto& d : differences) list += (list.empty() ? "" : "; ") + d;
    throw ConfigError("cannot resume from " + path + ": " + list +
                      ". Resume with the same settings, or name the fields this run may change "
                      "(--resume-override FIELD,...; FitOptions::resume_overrides)");
  }
  const auto& params = c.section("params", path).values;
  if (static_cast<int64_t>(params.size()) != model.params.size()) {
    throw FormatError(path, 0,
                      "params section has " + std::to_string(params.size()) + " values, expected " +
                          std::to_string(model.params.size()));
  }
  for (size_t k = 0; k < model.optimizer_state.size(); ++k) {
    const auto& values = c.section("optimizer/" + std::to_string(k), path).values;
    if (static_cast<int64_t>(values.size()) != model.optimizer_state[k].size()) {
      throw FormatError(path, 0, "optimizer slot " + std::to_string(k) + " has the wrong size");
    }
  }
  check_whole_numbers(c.header, path);
  try {
    const json& j = c.header.at("progress");
    FitProgress q;
    q.epoch = j.at("epoch").get<int>();
    q.step = j.at("step").get<int64_t>();
    q.global_step = j.at("global_step").get<int64_t>();
    q.seed = j.at("seed").get<uint64_t>();
    q.epoch_totals = {.loss_sum = j.at("loss_sum").get<double>(),
                      .correct_sum = j.at("correct_sum").get<double>(),
                      .samples = j.at("samples").get<int64_t>()};
    q.history = history_from(j.at("history"));
    const int64_t iterations = c.header.at("iterations").get<int64_t>();
    const double learning_rate = c.header.at("learning_rate").get<double>();
    // Every number is checked before any is used (a negative step once crashed a resume).
    auto check = [&](bool ok, const std::string& what) {
      if (!ok) throw FormatError(path, 16, "checkpoint field out of range: " + what);
    };
    check(q.epoch >= 0, "epoch " + std::to_string(q.epoch));
    check(q.step >= 0, "step " + std::to_string(q.step));
    check(q.global_step >= 0 && q.global_step >= q.step,
          "global_step " + std::to_string(q.global_step));
    check(iterations >= 0, "iterations " + std::to_string(iterations));
    check(q.epoch_totals.samples >= 0, "samples " + std::to_string(q.epoch_totals.samples));
    check(std::isfinite(q.epoch_totals.loss_sum) && std::isfinite(q.epoch_totals.correct_sum) &&
              q.epoch_totals.correct_sum >= 0,
          "epoch sums");
    check(std::isfinite(learning_rate) && learning_rate > 0,
          "learning_rate " + std::to_string(learning_rate));
    check(q.history.epoch.size() <= static_cast<size_t>(q.epoch),
          "history of " + std::to_string(q.history.epoch.size()) + " epochs at epoch " +
              std::to_string(q.epoch));
    model.iterations = iterations;
    model.learning_rate = learning_rate;
    p = std::move(q);
  } catch (const json::exception& e) {
    throw FormatError(path, 16, std::string("invalid checkpoint progress: ") + e.what());
  }
  std::copy(params.begin(), params.end(), model.params.data());
  for (size_t k = 0; k < model.optimizer_state.size(); ++k) {
    const auto& values = c.section("optimizer/" + std::to_string(k), path).values;
    std::copy(values.begin(), values.end(), model.optimizer_state[k].data());
  }
}

CheckpointDir::CheckpointDir(std::string dir, int keep) : dir_(std::move(dir)), keep_(keep) {
  if (keep_ < 1) throw ConfigError("checkpoints to keep must be >= 1, got " + std::to_string(keep));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) {
    throw IoError(dir_, "cannot create the checkpoint directory" +
                            (ec ? ": " + ec.message() : std::string()));
  }
}

std::vector<std::string> CheckpointDir::list() const {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const int64_t step = step_of(entry.path());
    if (step >= 0 && entry.is_regular_file()) found.emplace_back(step, entry.path().string());
  }
  if (ec) throw IoError(dir_, "cannot list the checkpoint directory: " + ec.message());
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

void CheckpointDir::check_empty() const {
  const std::vector<std::string> here = list();
  if (here.empty()) return;
  throw ConfigError(dir_ + " holds " + std::to_string(here.size()) + " checkpoint" +
                    (here.size() > 1 ? "s" : "") + " (newest " + here.back() +
                    ") that a fresh run would replace; --resume to continue that run, "
                    "--overwrite-checkpoints to replace them, or another --checkpoint-dir");
}

std::string CheckpointDir::save(const std::string& bytes, int64_t global_step, bool first_of_run,
                                bool resumed) const {
  char name[64];
  std::snprintf(name, sizeof name, "%s%09lld%s", kPrefix, static_cast<long long>(global_step),
                kSuffix);
  const std::string path = (fs::path(dir_) / name).string();
  write_file_atomically(path, bytes);
  std::vector<std::string> ours;
  for (const auto& p : list()) {
    const int64_t step = step_of(fs::path(p));
    const bool other_timeline = (first_of_run && !resumed && p != path) || step > global_step;
    std::error_code ec;
    if (other_timeline) {
      fs::remove(p, ec);  // a file that cannot be removed is harmless: resume never picks it
    } else {
      ours.push_back(p);
    }
  }
  for (size_t i = 0; i + keep_ < ours.size(); ++i) {
    std::error_code ec;
    fs::remove(ours[i], ec);
  }
  return path;
}

std::optional<CheckpointDir::Found> CheckpointDir::newest_intact(std::ostream& warn) const {
  const auto paths = list();
  for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
    try {
      std::string bytes = read_container_file(*it);  // a regular file, size-capped
      decode_container(bytes, *it, "checkpoint");    // magic, version, checksum, sizes
      return Found{*it, std::move(bytes)};
    } catch (const Error& e) {
      warn << "tandem: warning: skipping checkpoint " << e.what() << "; "
           << (std::next(it) != paths.rend() ? "falling back to " + *std::next(it)
                                             : std::string("no older checkpoint is left"))
           << "\n";
    }
  }
  return std::nullopt;
}

}  // namespace tandem::detail
