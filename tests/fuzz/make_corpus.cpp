// Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<reader>/): small valid
// files of every kind each reader takes, and a few near misses. Run from the build tree:
//   tandem_fuzz_make_corpus tests/fuzz/corpus
// It overwrites its own seeds only (named seed-*); regression inputs found by fuzzing
// (named crash-*, oom-*, timeout-*, leak-*) are kept.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "advise/hardware_profile.h"
#include "data/fixture_files.h"
#include "fuzz_models.h"
#include "model/container.h"
#ifdef TANDEM_HAVE_KERAS_FILES
#include "model/keras/zip_archive.h"
#endif

namespace fs = std::filesystem;
using namespace tandem;
using fixtures::Bytes;

namespace {

fs::path root;

void put(const std::string& reader, const std::string& name, const std::string& bytes) {
  const fs::path dir = root / reader;
  fs::create_directories(dir);
  std::ofstream(dir / ("seed-" + name), std::ios::binary) << bytes;
}
void put(const std::string& reader, const std::string& name, const Bytes& bytes) {
  put(reader, name, std::string(bytes.begin(), bytes.end()));
}
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
Bytes with_mode(uint8_t mode, const Bytes& rest) {
  Bytes out = {mode};
  fixtures::append(out, rest);
  return out;
}

void idx_seeds() {
  const Bytes images = fixtures::idx_bytes({3, 2, 4}, fixtures::pattern_bytes(24));
  const Bytes labels = fixtures::idx_bytes({5}, {0, 1, 2, 9, 4});
  const Bytes empty = fixtures::idx_bytes({0, 28, 28}, {});
  const Bytes rank4 = fixtures::idx_bytes({1, 2, 2, 2}, fixtures::pattern_bytes(8, 3));
  put("idx_plain", "images", images);
  put("idx_plain", "labels", labels);
  put("idx_plain", "empty", empty);
  put("idx_plain", "rank4", rank4);
  put("idx_plain", "mnist-like", fixtures::idx_bytes({2, 28, 28}, fixtures::pattern_bytes(1568)));
  // idx_gz: mode 0 = content the harness gzips, mode 1 = a gzip file as is.
  put("idx_gz", "content-images", with_mode(0xC0, images));
  put("idx_gz", "content-two-members", with_mode(0xC2 | (4 << 2), labels));
  put("idx_gz", "content-stored", with_mode(0x00, rank4));
  put("idx_gz", "file-images", with_mode(1, fixtures::gzip(images)));
  put("idx_gz", "file-empty", with_mode(1, fixtures::gzip(empty)));
  Bytes joined = fixtures::gzip(Bytes(labels.begin(), labels.begin() + 6));
  fixtures::append(joined, fixtures::gzip(Bytes(labels.begin() + 6, labels.end())));
  put("idx_gz", "file-joined", with_mode(1, joined));
}

void npz_seeds() {
  const Bytes x_train = fixtures::npy_bytes({2, 3, 3}, fixtures::pattern_bytes(18));
  const Bytes y_train = fixtures::npy_bytes({2}, {1, 7});
  const Bytes x_test = fixtures::npy_bytes({1, 3, 3}, fixtures::pattern_bytes(9, 5));
  const Bytes y_test = fixtures::npy_bytes({1}, {3});
  for (bool deflate : {false, true}) {
    const auto zip = fixtures::zip_archive({{"x_train.npy", x_train, deflate},
                                            {"y_train.npy", y_train, deflate},
                                            {"x_test.npy", x_test, deflate},
                                            {"y_test.npy", y_test, deflate}});
    put("npz", deflate ? "mnist-deflated" : "mnist-stored", zip.bytes);
  }
  put("npz", "numpy-zip64-local",
      fixtures::zip_archive({{"x.npy", x_test, false, true}, {"y.npy", y_test, true, true}}).bytes);
  put("npz", "v2-bool",
      fixtures::zip_archive({{"x.npy", fixtures::npy_bytes({3}, {1, 0, 1}, "|b1", false, 2)}})
          .bytes);
  put("npz", "scalar", fixtures::zip_archive({{"x.npy", fixtures::npy_bytes({}, {42})}}).bytes);
}

void model_seeds(const fs::path& scratch) {
  const std::string path = (scratch / "m.tandem").string();
  set_random_seed(1);
  {
    Model m = fuzz::weights_model();
    m.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
    m.save(path);
    put("model", "mlp-adam", slurp(path));
    put("weights", "model-file", slurp(path));  // load_weights takes a model file too
    m.save_weights(path);
    put("model", "weights-only", slurp(path));
    put("weights", "weights-file", slurp(path));
  }
  {
    auto in = Input({2, 3});
    auto flat = Flatten()(in);
    auto a = Dense(4, "tanh")(flat);
    auto b = Dense(4, "sigmoid")(flat);
    Model m(in, Dense(2)(Concatenate()({Add()({a, b}), Dropout(0.2)(a)})), "branchy");
    m.save(path);
    put("model", "branchy-uncompiled", slurp(path));
  }
  {
    Sequential m({5}, {Dense(3, "relu", {.use_bias = false}), Activation("softmax")});
    m.compile(SGD(0.1, 0.9, true), "sparse_categorical_crossentropy", {"accuracy"});
    m.save(path);
    put("model", "sequential-sgd", slurp(path));
  }
  {
    Sequential m({3}, {Dense(2)});
    m.compile("rmsprop", "mse");
    m.save(path);
    put("model", "rmsprop-mse", slurp(path));
  }
  {  // every image layer, and BatchNormalization's non-trainable weights
    auto in = Input({6, 6, 2});
    auto x = ZeroPadding2D(Padding2D(1, 0, 1, 0))(in);
    x = Conv2D(3, 3, "relu", {.strides = 2, .padding = "same", .dilation_rate = 1})(x);
    x = BatchNormalization()(x);
    auto a = MaxPooling2D(2, {.strides = 1, .padding = "same"})(x);
    auto b = AveragePooling2D(2, {.strides = Size2(1, 1), .padding = "same"})(x);
    x = Concatenate()({a, Conv2D(3, 1, "linear", {.use_bias = false})(b)});
    x = Reshape({-1, 3})(GlobalAveragePooling2D()(Add()({x, x})));
    Model m(in, Dense(2, "softmax")(Flatten()(x)), "convnet");
    m.compile(Adam(), "categorical_crossentropy");
    m.save(path);
    put("model", "convnet-bn-adam", slurp(path));
  }
}

// config.json texts for the keras_config harness: the one that fits its weights (compiled
// and not), and near misses (a Sequential, a layer renamed, the graph cut).
void keras_config_seeds(const fs::path& scratch) {
  const auto config_of = [&](const Model& m) {
    const std::string path = (scratch / "k.keras").string();
    m.save(path);
    return detail::ZipReader(slurp(path), path).read("config.json", 1 << 24);
  };
  Model m = fuzz::keras_model();
  const std::string fitting = config_of(m);
  put("keras_config", "fits-weights", fitting);
  nlohmann::json renamed = nlohmann::json::parse(fitting);
  renamed["config"]["layers"][1]["name"] = "other";
  put("keras_config", "renamed-layer", renamed.dump());
  nlohmann::json cut = nlohmann::json::parse(fitting);
  cut["config"]["layers"].erase(cut["config"]["layers"].begin() + 2);
  put("keras_config", "cut-graph", cut.dump());
  auto in = Input({6, 6, 2});
  Model uncompiled(in, Dense(3)(Flatten()(in)));
  put("keras_config", "uncompiled-dense", config_of(uncompiled));
  put("keras_config", "sequential",
      R"({"class_name": "Sequential", "config": {"name": "s", "layers": [)"
      R"({"class_name": "InputLayer", "config": {"batch_shape": [null, 6, 6, 2]}},)"
      R"({"class_name": "Flatten", "config": {"name": "flatten"}},)"
      R"({"class_name": "Dense", "config": {"name": "dense", "units": 3}}]}})");
}

void checkpoint_seeds() {
  Model m = fuzz::checkpoint_model();
  const nlohmann::json identity = fuzz::checkpoint_identity(m);
  detail::FitProgress p;
  p.epoch = 2;
  p.step = 1;
  p.global_step = 9;
  p.seed = 1234;
  p.epoch_totals = {.loss_sum = 3.5, .correct_sum = 4, .samples = 8};
  p.history.epoch = {0, 1};
  p.history.history = {{"loss", {1.2, 0.9}}, {"accuracy", {0.3, 0.5}}};
  const std::string mid = detail::encode_checkpoint(m.state(), p, identity);
  auto as_bytes = [](uint8_t mode, const std::string& s) {
    Bytes out = {mode};
    out.insert(out.end(), s.begin(), s.end());
    return out;
  };
  put("checkpoint", "mid-epoch-any-identity", as_bytes(0, mid));
  put("checkpoint", "mid-epoch-own-identity", as_bytes(1, mid));
  detail::FitProgress start;
  put("checkpoint", "start", as_bytes(0, detail::encode_checkpoint(m.state(), start, identity)));
}

void profile_seeds() {
  for (const char* name : {"this-machine-cpu", "pcie3-4gpu", "v100-nvlink-8gpu"}) {
    put("hardware_profile", name,
        slurp(fs::path(detail::profiles_directory()) / (name + std::string(".json"))));
  }
  // The CPU profile with the update at once and where it ran, its cache readings counted
  // (calibrate's since b28c957), so that the reader's window fields are fuzzed too.
  nlohmann::json windows = nlohmann::json::parse(
      slurp(fs::path(detail::profiles_directory()) / "this-machine-cpu.json"));
  nlohmann::json& device = windows["device"];
  device["update_contention"] = {{{"bytes", 262144}, {"own", 1.05}, {"shard", 3.0}}};
  device["update_contention_devices"] = 2;
  detail::ProbeWindow w{35, 1, 36e-9, 0, 24e-9, 2, 9.7e-6, 5.5e-6, 13};
  device["update_contention_window"] = detail::probe_window_json(w);
  put("hardware_profile", "this-machine-cpu-windows", windows.dump(2) + "\n");
}

void history_seeds() {
  put("history", "csvlogger",
      std::string("epoch,accuracy,loss,val_accuracy,val_loss\n"
                  "0,0.5,1.2,0.55,1.1\n1,0.7,0.9,0.72,0.85\n"));
  put("history", "csvlogger-crlf", std::string("epoch,loss\r\n0,0.5\r\n1,0.25\r\n"));
  put("history", "metrics-json",
      std::string(R"({"epochs": [{"epoch": 1, "loss": 1.5, "accuracy": 0.4, "seconds": 2},)"
                  R"( {"epoch": 2, "loss": 1.0, "accuracy": 0.6, "seconds": 2}]})"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " CORPUS_DIR (tests/fuzz/corpus)\n";
    return 2;
  }
  root = argv[1];
  const fs::path scratch = fs::temp_directory_path() / "tandem_make_corpus";
  fs::create_directories(scratch);
  idx_seeds();
  npz_seeds();
  model_seeds(scratch);
  checkpoint_seeds();
#ifdef TANDEM_HAVE_KERAS_FILES
  keras_config_seeds(scratch);
#endif
  profile_seeds();
  history_seeds();
  fs::remove_all(scratch);
  std::cout << "seeds written under " << root << "\n";
  return 0;
}
