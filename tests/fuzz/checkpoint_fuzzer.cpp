// Fuzzes decode_checkpoint (the in-memory entry point resume uses after reading the file)
// into a fixed model. The first byte picks the identity compared against: bit 0 set, the
// run's own (fuzzes the comparison); clear, none (every checkpoint passes to the progress
// fields). The checksum is fixed up first, so mutations reach what it guards.
#include "fuzz_models.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static tandem::Model model = tandem::fuzz::checkpoint_model();
  static const nlohmann::json identity = tandem::fuzz::checkpoint_identity(model);
  if (size == 0) return 0;
  const bool compare = data[0] & 1;
  const std::string bytes = tandem::fuzz::with_container_crc(data + 1, size - 1);
  tandem::detail::FitProgress progress;
  try {
    tandem::detail::decode_checkpoint(bytes, "fuzz.ckpt", model.state(), progress,
                                      compare ? identity : nlohmann::json::object());
  } catch (const tandem::Error&) {
    // Expected: a typed error naming the file.
  }
  return 0;
}
