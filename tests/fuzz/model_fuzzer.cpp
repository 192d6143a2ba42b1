// Fuzzes Model::load (the tandem container, the architecture JSON, the weights and the
// optimizer state), then summary_string() as `tandem summary --model F` does. The checksum
// is fixed up first, so mutations reach what it guards.
#include "fuzz_util.h"
#include "tandem/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::fuzz::InputPath file("model.tandem");
  const std::string bytes = tandem::fuzz::with_container_crc(data, size);
  try {
    tandem::Model model = tandem::Model::load(
        file.write(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    (void)model.summary_string();
  } catch (const tandem::Error&) {
    // Expected: a typed error naming the file.
  }
  return 0;
}
