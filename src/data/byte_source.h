// Bytes from disk for the dataset readers: a regular file (core/input_file.h), and a
// streaming inflater for gzip files and the raw-deflate members of ZIP archives. Streaming
// lets a reader check a header before it commits memory to the body, and stop at the size
// the header allows: a size a file claims costs memory only as the data backs it up.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tandem::detail {

// True when `bytes` starts with the gzip magic 1f 8b.
bool is_gzip(std::span<const uint8_t> bytes);

// Deflate cannot expand better than about 1032:1, so a size beyond that is a lie.
inline constexpr uint64_t kMaxDeflateRatio = 1032;
// The most `compressed` bytes of deflate data can inflate to.
uint64_t max_inflated_size(uint64_t compressed);

class InflateStream {
 public:
  enum class Wrapper {
    gzip,  // gzip members, concatenated ones joined as gzip(1) does; CRC and size checked
    raw,   // one raw deflate stream (ZIP); bytes after its end marker are ignored
  };
  // `compressed` starts at `base_offset` in the file at `path`: errors (FormatError) point
  // into the file, at the compressed byte where the stream went wrong.
  InflateStream(std::span<const uint8_t> compressed, Wrapper wrapper, std::string path,
                int64_t base_offset = 0);
  ~InflateStream();
  InflateStream(const InflateStream&) = delete;
  InflateStream& operator=(const InflateStream&) = delete;

  // The next decompressed bytes into dst[0, n); returns how many, fewer than n only when the
  // content ends there. FormatError when the stream is corrupt or cut short.
  size_t read(uint8_t* dst, size_t n);
  // Appends up to n more bytes to `out`, growing it as bytes actually arrive (never by more
  // than about twice what arrived); returns how many. `what` names the buffer in an
  // out-of-memory error.
  size_t read_append(std::vector<uint8_t>& out, size_t n, const std::string& what);
  // Content left after what was read, counted and discarded, up to `limit` bytes: 0 when the
  // stream ends here (its trailer then checked, for gzip).
  uint64_t skip_rest(uint64_t limit);

  int64_t offset() const;  // in the file, of the next compressed byte

 private:
  std::span<const uint8_t> in_;
  Wrapper wrapper_;
  std::string path_;
  int64_t base_offset_;
  z_stream stream_{};
  size_t consumed_ = 0;
  uint64_t produced_ = 0;
  bool finished_ = false;
};

}  // namespace tandem::detail
