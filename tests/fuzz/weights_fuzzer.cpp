// Fuzzes Model::load_weights (the tandem container and its weight list, checked against a
// fixed architecture; a model file is accepted too). The checksum is fixed up first, so
// mutations reach what it guards.
#include "fuzz_models.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::fuzz::InputPath file("weights.tandem");
  static tandem::Model model = tandem::fuzz::weights_model();
  const std::string bytes = tandem::fuzz::with_container_crc(data, size);
  try {
    model.load_weights(file.write(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    for (const tandem::Tensor& w : model.get_weights()) {
      if (w.size() != tandem::shape_size(w.shape())) std::abort();
    }
  } catch (const tandem::Error&) {
    // Expected: a typed error naming the file.
  }
  return 0;
}
