// A zip archive held in memory, read and written through libzip: what a .keras file is
// (config.json, metadata.json, model.weights.h5). Every error names the file and the entry.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

struct zip;  // libzip's zip_t

namespace tandem::detail {

class ZipReader {
 public:
  // Opens the archive in `bytes` (the whole file at `path`, which only names it in errors).
  // FormatError when it is not a zip archive or its central directory is damaged.
  ZipReader(std::string bytes, std::string path);
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  bool contains(const std::string& entry) const;
  // The uncompressed size `entry` declares (0 when it is missing).
  uint64_t declared_size(const std::string& entry) const;
  // The uncompressed bytes of `entry`, whose declared size must be at most max_bytes (checked
  // before anything is allocated); FormatError naming the entry when it is missing, larger,
  // encrypted, or fails its CRC.
  std::string read(const std::string& entry, uint64_t max_bytes) const;

 private:
  std::string bytes_;
  std::string path_;
  ::zip* archive_ = nullptr;
};

// The archive of `entries` (name, contents), stored uncompressed as Keras stores them, as
// the bytes of a zip file.
std::string zip_archive(const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace tandem::detail
