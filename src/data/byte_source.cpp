#include "data/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Deflate cannot expand better than about 1032:1, so a claimed size beyond that is a lie
// (corrupt header) and must not become an allocation.
constexpr uint64_t kMaxDeflateRatio = 1032;

std::string errno_text(const std::string& action) {
  return action + ": " + std::strerror(errno);
}

// Owns one zlib inflate state; `window_bits` picks the wrapper (16+MAX_WBITS gzip, negative raw).
class Inflater {
 public:
  explicit Inflater(int window_bits) {
    if (int rc = inflateInit2(&stream_, window_bits); rc != Z_OK) {
      throw BackendError("inflateInit2(" + std::to_string(window_bits) + ") failed with " +
                         std::to_string(rc) + " at " + __FILE__ + ":" + std::to_string(__LINE__));
    }
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // One inflate() call over in[consumed..) -> out[produced..); advances both counters.
  // zlib counts in uInt (32 bits), so huge buffers go through in slices.
  int step(std::span<const uint8_t> in, size_t& consumed, std::vector<uint8_t>& out,
           size_t& produced) {
    const size_t in_slice = std::min<size_t>(in.size() - consumed, UINT_MAX);
    const size_t out_slice = std::min<size_t>(out.size() - produced, UINT_MAX);
    stream_.next_in = const_cast<Bytef*>(in.data() + consumed);  // zlib never writes input
    stream_.avail_in = static_cast<uInt>(in_slice);
    stream_.next_out = out.data() + produced;
    stream_.avail_out = static_cast<uInt>(out_slice);
    const int rc = inflate(&stream_, Z_NO_FLUSH);
    consumed += in_slice - stream_.avail_in;
    produced += out_slice - stream_.avail_out;
    return rc;
  }
  void reset() { inflateReset(&stream_); }
  std::string message() const { return stream_.msg ? stream_.msg : "no detail from zlib"; }

 private:
  z_stream stream_{};
};

// gzip's trailer ends with ISIZE, the content size mod 2^32: a good first guess for the output.
size_t gunzip_size_hint(std::span<const uint8_t> compressed) {
  const size_t fallback = std::max<size_t>(4096, compressed.size() * 4);
  if (compressed.size() < 18) return fallback;  // 10-byte header + 8-byte trailer at least
  const uint8_t* t = compressed.data() + compressed.size() - 4;
  const uint64_t isize =
      uint64_t{t[0]} | uint64_t{t[1]} << 8 | uint64_t{t[2]} << 16 | uint64_t{t[3]} << 24;
  if (isize == 0 || isize > compressed.size() * kMaxDeflateRatio) return fallback;
  return static_cast<size_t>(isize);
}

}  // namespace

bool is_gzip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::vector<uint8_t> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path, errno_text("cannot open"));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) throw IoError(path, errno_text("cannot stat"));
  if (S_ISDIR(st.st_mode)) throw IoError(path, "is a directory, expected a file");

  // st_size is only a hint (pipes and /proc report 0): read until EOF.
  std::vector<uint8_t> bytes(st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : 65536);
  size_t filled = 0;
  while (true) {
    if (filled == bytes.size()) bytes.resize(bytes.size() * 2);
    const ssize_t n = ::read(fd, bytes.data() + filled, bytes.size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(path, errno_text("read failed after " + std::to_string(filled) + " bytes"));
    }
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  bytes.resize(filled);
  return bytes;
}

std::vector<uint8_t> gunzip(std::span<const uint8_t> compressed, const std::string& path) {
  Inflater inflater(16 + MAX_WBITS);
  std::vector<uint8_t> out(gunzip_size_hint(compressed));
  size_t consumed = 0, produced = 0;
  while (true) {
    if (produced == out.size()) out.resize(out.size() * 2);
    const int rc = inflater.step(compressed, consumed, out, produced);
    if (rc == Z_STREAM_END) {
      if (consumed == compressed.size()) break;
      // gzip(1) joins concatenated members; anything else after a member is damage.
      if (is_gzip(compressed.subspan(consumed))) {
        inflater.reset();
        continue;
      }
      throw FormatError(path, static_cast<int64_t>(consumed),
                        std::to_string(compressed.size() - consumed) +
                            " bytes of trailing data after the end of the gzip stream");
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
      throw FormatError(path, static_cast<int64_t>(consumed),
                        "corrupt gzip stream (" + inflater.message() + ") after " +
                            std::to_string(produced) + " decompressed bytes; re-download it");
    }
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    // Z_OK or Z_BUF_ERROR: with output room left, no more input means the file was cut short.
    if (consumed == compressed.size() && produced < out.size()) {
      throw FormatError(path, static_cast<int64_t>(consumed),
                        "truncated gzip stream: the file ends inside the compressed data (" +
                            std::to_string(produced) +
                            " bytes decompressed so far); re-download it");
    }
  }
  out.resize(produced);
  return out;
}

FileBytes read_file_maybe_gzipped(const std::string& path) {
  std::vector<uint8_t> raw = read_file(path);
  if (!is_gzip(raw)) return {std::move(raw), false};
  return {gunzip(raw, path), true};
}

std::vector<uint8_t> inflate_raw(std::span<const uint8_t> compressed, uint64_t expected_size,
                                 const std::string& path, int64_t base_offset) {
  if (expected_size > compressed.size() * kMaxDeflateRatio + 1024) {
    throw FormatError(path, base_offset,
                      "claims " + std::to_string(expected_size) + " bytes from " +
                          std::to_string(compressed.size()) +
                          " compressed bytes, beyond what deflate can encode");
  }
  Inflater inflater(-MAX_WBITS);
  // One spare byte so a stream that runs long is caught instead of silently cut.
  std::vector<uint8_t> out(static_cast<size_t>(expected_size) + 1);
  size_t consumed = 0, produced = 0;
  auto at = [&](size_t offset) { return base_offset + static_cast<int64_t>(offset); };
  while (true) {
    const int rc = inflater.step(compressed, consumed, out, produced);
    // Bytes after the end marker are ignored, as unzip does; the CRC still guards the content.
    if (rc == Z_STREAM_END) break;
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
      throw FormatError(path, at(consumed), "corrupt deflate data (" + inflater.message() + ")");
    }
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (produced > expected_size) {
      throw FormatError(path, at(consumed),
                        "deflate data inflates to more than the " + std::to_string(expected_size) +
                            " bytes the archive declares");
    }
    if (consumed == compressed.size()) {
      throw FormatError(path, at(consumed),
                        "truncated deflate data: ends after " + std::to_string(produced) + " of " +
                            std::to_string(expected_size) + " bytes");
    }
  }
  if (produced != expected_size) {
    throw FormatError(path, at(consumed),
                      "deflate data inflates to " + std::to_string(produced) +
                          " bytes but the archive declares " + std::to_string(expected_size));
  }
  out.resize(produced);
  return out;
}

}  // namespace tandem::detail
