// The build without libzip and libhdf5 (-DTANDEM_WITH_KERAS_FILES=OFF, or not found).
#include "model/keras/keras_files.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

[[noreturn]] void unavailable(const std::string& path) {
  throw ConfigError(path +
                    ": this tandem was built without Keras file support (libzip and libhdf5; "
                    "apt-get install libzip-dev libhdf5-dev and rebuild); save as .tandem");
}

}  // namespace

bool keras_files_available() {
  return false;
}
void save_keras_model(const Model&, const std::string& path) {
  unavailable(path);
}
Model load_keras_model(const std::string& path, bool) {
  unavailable(path);
}
Model load_legacy_h5_model(const std::string& path, bool) {
  unavailable(path);
}
void load_legacy_h5_weights(Model&, const std::string& path) {
  unavailable(path);
}
void save_keras_weights(const Model&, const std::string& path) {
  unavailable(path);
}
void load_keras_weights(Model&, const std::string& path) {
  unavailable(path);
}

}  // namespace tandem::detail
