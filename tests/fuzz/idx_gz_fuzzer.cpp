// Fuzzes read_idx on gzip files. The first byte picks what the rest is:
//   bit 0 set:   the gzip file itself (the gzip layer: header, members, trailer);
//   bit 0 clear: IDX content that the harness gzips (level from bits 5-7), so mutations
//                reach the IDX checks behind the streaming inflater; bit 1 then splits it
//                into two members (after bits 2-4 eighths of it), else bit 2 damages the
//                trailer and bit 3 cuts the end off.
#include <vector>

#include "fuzz_util.h"
#include "tandem/datasets.h"

namespace {

std::vector<uint8_t> gzip(const uint8_t* data, size_t size, int level) {
  z_stream s{};
  if (deflateInit2(&s, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    std::abort();
  }
  std::vector<uint8_t> out(deflateBound(&s, size) + 64);
  s.next_in = const_cast<Bytef*>(data);
  s.avail_in = static_cast<uInt>(size);
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::fuzz::InputPath file("idx_gz");
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  ++data, --size;
  std::vector<uint8_t> bytes;
  if (mode & 1) {
    bytes.assign(data, data + size);
  } else {
    const int level = (mode >> 5) & 7;  // 0 (stored blocks) .. 7
    if (mode & 2) {
      // Two members, split at a point the mode chooses: gzip(1) joins them.
      const size_t split = size == 0 ? 0 : ((mode >> 2) & 7) * size / 8;
      bytes = gzip(data, split, level);
      const std::vector<uint8_t> second = gzip(data + split, size - split, level);
      bytes.insert(bytes.end(), second.begin(), second.end());
    } else {
      bytes = gzip(data, size, level);
      // Damage the trailer or cut the stream short, as a bad download would.
      if (mode & 4 && !bytes.empty()) bytes[bytes.size() - 1 - ((mode >> 3) & 3)] ^= 0x5A;
      if (mode & 8 && bytes.size() > 4) bytes.resize(bytes.size() - 1 - ((mode >> 4) & 1) * 3);
    }
  }
  try {
    const tandem::ByteArray a = tandem::read_idx(file.write(bytes.data(), bytes.size()));
    if (a.size() != tandem::shape_size(a.shape())) std::abort();
  } catch (const tandem::Error&) {
    // Expected: a typed error naming the file.
  }
  return 0;
}
