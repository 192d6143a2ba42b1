#include "data/byte_source.h"

#include <algorithm>
#include <climits>

#include "core/input_file.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

// What read_append grows a buffer by at least: small claims cost nothing to honour.
constexpr size_t kMinGrowth = size_t{1} << 20;

}  // namespace

bool is_gzip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

uint64_t max_inflated_size(uint64_t compressed) {
  return compressed * kMaxDeflateRatio + 1024;
}

InflateStream::InflateStream(std::span<const uint8_t> compressed, Wrapper wrapper, std::string path,
                             int64_t base_offset)
    : in_(compressed), wrapper_(wrapper), path_(std::move(path)), base_offset_(base_offset) {
  const int window_bits = wrapper == Wrapper::gzip ? 16 + MAX_WBITS : -MAX_WBITS;
  if (int rc = inflateInit2(&stream_, window_bits); rc != Z_OK) {
    if (rc == Z_MEM_ERROR) throw_out_of_memory(path_, "zlib's inflate state", sizeof stream_);
    throw BackendError("inflateInit2(" + std::to_string(window_bits) + ") failed with " +
                       std::to_string(rc) + " at " + __FILE__ + ":" + std::to_string(__LINE__) +
                       " while reading " + path_);
  }
}

InflateStream::~InflateStream() {
  inflateEnd(&stream_);
}

int64_t InflateStream::offset() const {
  return base_offset_ + static_cast<int64_t>(consumed_);
}

size_t InflateStream::read(uint8_t* dst, size_t n) {
  const bool gzip = wrapper_ == Wrapper::gzip;
  const std::string kind = gzip ? "gzip stream" : "deflate data";
  size_t filled = 0;
  while (filled < n && !finished_) {
    // zlib counts in uInt (32 bits): huge buffers go through in slices.
    const size_t in_slice = std::min<size_t>(in_.size() - consumed_, UINT_MAX);
    const size_t out_slice = std::min<size_t>(n - filled, UINT_MAX);
    stream_.next_in = const_cast<Bytef*>(in_.data() + consumed_);  // zlib never writes input
    stream_.avail_in = static_cast<uInt>(in_slice);
    stream_.next_out = dst + filled;
    stream_.avail_out = static_cast<uInt>(out_slice);
    const int rc = inflate(&stream_, Z_NO_FLUSH);
    consumed_ += in_slice - stream_.avail_in;
    const size_t got = out_slice - stream_.avail_out;
    filled += got;
    produced_ += got;
    if (rc == Z_STREAM_END) {
      if (!gzip || consumed_ == in_.size()) {
        finished_ = true;
        break;
      }
      // gzip(1) joins concatenated members; anything else after a member is damage.
      if (is_gzip(in_.subspan(consumed_))) {
        inflateReset(&stream_);
        continue;
      }
      throw FormatError(path_, offset(),
                        std::to_string(in_.size() - consumed_) +
                            " bytes of trailing data after the end of the gzip stream");
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
      const std::string detail = stream_.msg ? stream_.msg : "no detail from zlib";
      throw FormatError(path_, offset(),
                        "corrupt " + kind + " (" + detail + ") after " + std::to_string(produced_) +
                            " decompressed bytes" + (gzip ? "; re-download it" : ""));
    }
    if (rc == Z_MEM_ERROR) throw_out_of_memory(path_, "zlib's inflate window", 1 << MAX_WBITS);
    // Z_OK or Z_BUF_ERROR: with output room left, no more input means the file was cut short.
    if (consumed_ == in_.size() && filled < n) {
      throw FormatError(
          path_, offset(),
          gzip ? "truncated gzip stream: the file ends inside the compressed data (" +
                     std::to_string(produced_) + " bytes decompressed so far); re-download it"
               : "truncated deflate data: ends after " + std::to_string(produced_) + " bytes");
    }
  }
  return filled;
}

size_t InflateStream::read_append(std::vector<uint8_t>& out, size_t n, const std::string& what) {
  const size_t start = out.size();
  size_t got = 0;
  while (got < n && !finished_) {
    // Grow by what has arrived so far (at least kMinGrowth), never past what was asked.
    const size_t room = std::min(n - got, std::max(kMinGrowth, start + got));
    allocating(path_, what, start + got + room, [&] { out.resize(start + got + room); });
    const size_t filled = read(out.data() + start + got, room);
    got += filled;
    if (filled < room) break;
  }
  out.resize(start + got);
  return got;
}

uint64_t InflateStream::skip_rest(uint64_t limit) {
  uint8_t scratch[16384];
  uint64_t skipped = 0;
  while (!finished_ && skipped < limit) {
    // Content that ends exactly here still has its end marker (and gzip trailer) to read.
    skipped +=
        read(scratch, static_cast<size_t>(std::min<uint64_t>(sizeof scratch, limit - skipped)));
  }
  return skipped;
}

}  // namespace tandem::detail
