// Fuzzes the .npz reader: read_npz_array for the member names the seeds use, then
// mnist::load_data, which reads four members and checks that they agree. The CRC-32 of every
// stored member is fixed up first, so mutations reach the .npy parsing behind it.
#include <string>

#include "fuzz_util.h"
#include "tandem/datasets.h"

namespace {

uint32_t le(const std::string& b, size_t at, int width) {
  uint32_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(b[at + i]);
  return v;
}

void put_le32(std::string& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Sets the CRC-32 of each stored member (central and local headers) to its data's.
void fix_stored_crcs(std::string& b) {
  const size_t size = b.size();
  if (size < 22) return;
  size_t eocd = std::string::npos;
  for (size_t at = size - 22 + 1; at-- > 0 && at + 22 + 0xFFFF >= size;) {
    if (le(b, at, 4) == 0x06054b50) {
      eocd = at;
      break;
    }
  }
  if (eocd == std::string::npos) return;
  const uint32_t entries = le(b, eocd + 10, 2);
  size_t at = le(b, eocd + 16, 4);
  for (uint32_t i = 0; i < entries && at + 46 <= eocd && le(b, at, 4) == 0x02014b50; ++i) {
    const uint32_t method = le(b, at + 10, 2), compressed = le(b, at + 20, 4);
    const size_t local = le(b, at + 42, 4);
    if (method == 0 && local + 30 <= size && le(b, local, 4) == 0x04034b50) {
      const size_t data = local + 30 + le(b, local + 26, 2) + le(b, local + 28, 2);
      if (data <= size && compressed <= size - data) {
        const uint32_t crc =
            tandem::fuzz::crc32_of(reinterpret_cast<const uint8_t*>(b.data()) + data, compressed);
        put_le32(b, at + 16, crc);
        put_le32(b, local + 14, crc);
      }
    }
    at += 46 + le(b, at + 28, 2) + le(b, at + 30, 2) + le(b, at + 32, 2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::fuzz::InputPath file("npz");
  std::string bytes(reinterpret_cast<const char*>(data), size);
  fix_stored_crcs(bytes);
  const std::string& path =
      file.write(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  for (const char* name : {"x", "x_train"}) {
    try {
      const tandem::ByteArray a = tandem::read_npz_array(path, name);
      if (a.size() != tandem::shape_size(a.shape())) std::abort();
    } catch (const tandem::Error&) {
      // Expected: a typed error naming the file.
    }
  }
  try {
    const tandem::TrainTestSplit split = tandem::mnist::load_data(path);
    if (split.train.x.dim(0) != split.train.y.dim(0)) std::abort();
  } catch (const tandem::Error&) {
  }
  return 0;
}
