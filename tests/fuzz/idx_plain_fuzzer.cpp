// Fuzzes read_idx on plain IDX files (the input is the file).
#include "fuzz_util.h"
#include "tandem/datasets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::fuzz::InputPath file("idx_plain");
  try {
    const tandem::ByteArray a = tandem::read_idx(file.write(data, size));
    if (a.size() != tandem::shape_size(a.shape())) std::abort();
  } catch (const tandem::Error&) {
    // Expected: a typed error naming the file.
  }
  return 0;
}
