// Fuzzes load_hardware_profile on a profile file (JSON, then every field and the
// calibration run the cost model replays).
#include "advise/hardware_profile.h"
#include "fuzz_util.h"
#include "tandem/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::fuzz::InputPath file("profile.json");
  try {
    (void)tandem::detail::load_hardware_profile(file.write(data, size));
  } catch (const tandem::Error&) {
    // Expected: a typed error naming the file.
  }
  return 0;
}
