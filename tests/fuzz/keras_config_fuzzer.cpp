// Fuzzes Model::load of a .keras file through its config.json: the input is config.json's
// text, zipped with the metadata and the weights (model.weights.h5, optimizer slots
// included) of fuzz::keras_model(), so mutations reach the translation of Keras's model,
// layer, graph and compile configs and the check of the weights against what they build.
#include <fstream>

#include "fuzz_models.h"
#include "fuzz_util.h"
#include "model/keras/zip_archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::fuzz::InputPath file("model.keras");
  static const std::string weights = [] {
    const tandem::fuzz::InputPath source("source.keras");
    const std::string& path = source.write(nullptr, 0);
    tandem::fuzz::keras_model().save(path);
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    return tandem::detail::ZipReader(bytes, path).read("model.weights.h5", 1 << 24);
  }();
  const std::string zip = tandem::detail::zip_archive(
      {{"metadata.json", "{\"keras_version\": \"3.15.1\"}"},
       {"config.json", std::string(reinterpret_cast<const char*>(data), size)},
       {"model.weights.h5", weights}});
  try {
    const tandem::Model model =
        tandem::Model::load(file.write(reinterpret_cast<const uint8_t*>(zip.data()), zip.size()));
    for (const tandem::Tensor& w : model.get_weights()) {
      if (w.size() != tandem::shape_size(w.shape())) std::abort();
    }
  } catch (const tandem::Error&) {
    // Expected: a typed error naming the file and the part of config.json.
  }
  return 0;
}
