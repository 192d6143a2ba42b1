#include "model/checkpoint.h"

#include <algorithm>
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
                  const DataFingerprints& data, bool shuffle) {
  return {{"architecture", model.graph->to_json()},
          {"optimizer", model.compiled ? model.compiled->optimizer.name : ""},
          {"batch_size", batch_size},
          {"samples", samples},
          {"x_fingerprint", data.x},
          {"y_fingerprint", data.y},
          {"shuffle", shuffle}};
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
                       FitProgress& p, const json& identity) {
  const Container c = decode_container(bytes, path, "checkpoint");
  json stored;
  try {
    stored = c.header.at("identity");
  } catch (const json::exception& e) {
    throw FormatError(path, 16, std::string("checkpoint header lacks its identity: ") + e.what());
  }
  for (const auto& [key, value] : identity.items()) {
    if (!stored.contains(key) || stored.at(key) != value) {
      const std::string was = stored.contains(key) ? stored.at(key).dump() : "(absent)";
      const std::string now = value.dump();
      const bool short_values = was.size() < 80 && now.size() < 80;
      throw ConfigError("cannot resume from " + path + ": its " + key + " differs from this run's" +
                        (short_values ? " (" + was + " there, " + now + " here)" : "") +
                        "; resume with the same model, data, batch size and shuffling");
    }
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
    model.iterations = c.header.at("iterations").get<int64_t>();
    model.learning_rate = c.header.at("learning_rate").get<double>();
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
      std::string bytes = read_whole_file(*it);
      decode_container(bytes, *it, "checkpoint");  // magic, version, checksum, sizes
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
