// Bytes from disk for the dataset readers: a whole file in memory, gunzipped when its content
// (not its name) says gzip, plus the raw-deflate inflater that ZIP members need.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tandem::detail {

struct FileBytes {
  std::vector<uint8_t> bytes;  // (size,) decompressed content
  bool was_gzipped = false;    // offsets into `bytes` are then offsets after gunzip
};

// True when `bytes` starts with the gzip magic 1f 8b.
bool is_gzip(std::span<const uint8_t> bytes);

// The whole file, as stored. IoError (with strerror) when it is missing, a directory or
// unreadable.
std::vector<uint8_t> read_file(const std::string& path);

// The whole file, gunzipped when it starts with 1f 8b. Concatenated gzip members are joined,
// as gzip(1) does. A corrupt or truncated stream is a FormatError at the compressed offset.
FileBytes read_file_maybe_gzipped(const std::string& path);

// gzip stream -> its content. `path` only names the source in errors.
std::vector<uint8_t> gunzip(std::span<const uint8_t> compressed, const std::string& path);

// Raw deflate stream (no zlib/gzip wrapper, as inside ZIP) -> exactly `expected_size` bytes.
// `base_offset` is where `compressed` starts in the file at `path`, so errors point into the
// file. A stream that ends early, runs long or is corrupt is a FormatError.
std::vector<uint8_t> inflate_raw(std::span<const uint8_t> compressed, uint64_t expected_size,
                                 const std::string& path, int64_t base_offset);

}  // namespace tandem::detail
