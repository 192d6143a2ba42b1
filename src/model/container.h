// The tandem file container (models, weights, checkpoints):
//   offset 0   8 bytes   magic "TANDEM\x01\n"
//          8   u32       format version (1)
//         12   u32       header length H (bytes of JSON)
//         16   H bytes   header JSON: {"kind": ..., "sections": [{"name", "count"}...], ...}
//     16 + H   float32 little-endian data of every section, in header order
//        end-4 u32       CRC-32 (zlib) of every byte before it
// Every read error is a FormatError with the file's path and the offset at fault.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tandem::detail {

inline constexpr uint32_t kContainerVersion = 1;
// The largest tandem file read (a model of 4 billion parameters): a file is read whole.
inline constexpr uint64_t kMaxContainerBytes = uint64_t{16} << 30;

struct Section {
  std::string name;
  std::vector<float> values;
};

struct Container {
  nlohmann::json header;  // "kind" and any metadata; "sections" is filled on write
  std::vector<Section> sections;

  const Section& section(const std::string& name, const std::string& path) const;
};

// Serialises and writes atomically.
void write_container(const std::string& path, Container container);
// The file's bytes, and back (decode verifies as read_container does; path names the
// origin in errors).
std::string encode_container(Container container);
Container decode_container(const std::string& bytes, const std::string& path,
                           const std::string& expected_kind);
// Reads and verifies magic, version, checksum and sizes; expected_kind "" accepts any.
Container read_container(const std::string& path, const std::string& expected_kind);
// The bytes of the tandem file at `path`: a regular file (no FIFO, device or directory) of at
// most kMaxContainerBytes; IoError naming it otherwise.
std::string read_container_file(const std::string& path);

}  // namespace tandem::detail
