// Shared harness for the data tests: a fresh temp directory per test, and writers for the
// formats we read (IDX, gzip, .npy, ZIP/.npz), built by hand so no Python or network is needed.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tandem/array.h"
#include "tandem/error.h"

namespace tandem::fixtures {

using Bytes = std::vector<uint8_t>;

// A directory that exists for one test and is removed after it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tandem_data_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write fixture " + path);
}

// (n,) deterministic, non-constant bytes, so misplaced offsets show up as wrong values.
inline Bytes pattern_bytes(size_t n, uint8_t seed = 0) {
  Bytes bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + seed);
  return bytes;
}

inline void append_be32(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}
inline void append_le(Bytes& out, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void append(Bytes& out, const Bytes& more) {
  out.insert(out.end(), more.begin(), more.end());
}

// IDX file: 00 00 type rank, big-endian dims, body.
inline Bytes idx_bytes(const Shape& dims, const Bytes& body, uint8_t type = 0x08) {
  Bytes out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (int64_t d : dims) append_be32(out, static_cast<uint32_t>(d));
  append(out, body);
  return out;
}

// window_bits: 16 + MAX_WBITS for gzip, -MAX_WBITS for raw deflate (ZIP).
inline Bytes zlib_compress(const Bytes& in, int window_bits) {
  z_stream s{};
  if (deflateInit2(&s, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  Bytes out(deflateBound(&s, in.size()) + 64);
  s.next_in = const_cast<Bytef*>(in.data());
  s.avail_in = static_cast<uInt>(in.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&s, Z_FINISH);
  out.resize(s.total_out);
  deflateEnd(&s);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}
inline Bytes gzip(const Bytes& in) {
  return zlib_compress(in, 16 + MAX_WBITS);
}

// .npy bytes as numpy writes them: header dict padded with spaces to a 64-byte boundary.
inline Bytes npy_bytes(const Shape& shape, const Bytes& body, const std::string& descr = "|u1",
                       bool fortran_order = false, int major = 1) {
  std::string dict = "{'descr': '" + descr +
                     "', 'fortran_order': " + (fortran_order ? "True" : "False") +
                     ", 'shape': " + shape_to_string(shape) + ", }";
  const size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  append_le(out, dict.size(), major == 1 ? 2 : 4);
  out.insert(out.end(), dict.begin(), dict.end());
  append(out, body);
  return out;
}

struct ZipMemberSpec {
  std::string name;
  Bytes content;
  bool deflate = false;
  // Local header as numpy.savez writes it (force_zip64): sizes 0xFFFFFFFF plus a zip64 extra
  // field; the central directory still holds the real 32-bit sizes.
  bool numpy_zip64_local = false;
  uint32_t crc_xor = 0;  // nonzero: record a wrong CRC32
};

struct ZipArchive {
  Bytes bytes;
  std::vector<int64_t> data_offsets;  // where each member's (compressed) data starts
  int64_t eocd_offset = 0;
};

inline ZipArchive zip_archive(const std::vector<ZipMemberSpec>& members) {
  ZipArchive zip;
  Bytes central;
  for (const ZipMemberSpec& m : members) {
    const Bytes data = m.deflate ? zlib_compress(m.content, -MAX_WBITS) : m.content;
    const uint32_t crc =
        static_cast<uint32_t>(crc32(0, m.content.data(), m.content.size())) ^ m.crc_xor;
    const uint16_t method = m.deflate ? 8 : 0;
    const int64_t local_offset = static_cast<int64_t>(zip.bytes.size());
    Bytes& out = zip.bytes;
    append_le(out, 0x04034b50, 4);
    append_le(out, m.numpy_zip64_local ? 45 : 20, 2);  // version needed
    append_le(out, 0, 2);                              // flags
    append_le(out, method, 2);
    append_le(out, 0, 4);  // time, date
    append_le(out, crc, 4);
    append_le(out, m.numpy_zip64_local ? 0xFFFFFFFF : data.size(), 4);
    append_le(out, m.numpy_zip64_local ? 0xFFFFFFFF : m.content.size(), 4);
    append_le(out, m.name.size(), 2);
    append_le(out, m.numpy_zip64_local ? 20 : 0, 2);  // extra length
    out.insert(out.end(), m.name.begin(), m.name.end());
    if (m.numpy_zip64_local) {
      append_le(out, 0x0001, 2);  // zip64 extended information
      append_le(out, 16, 2);
      append_le(out, m.content.size(), 8);
      append_le(out, data.size(), 8);
    }
    zip.data_offsets.push_back(static_cast<int64_t>(out.size()));
    append(out, data);

    append_le(central, 0x02014b50, 4);
    append_le(central, 20, 2);  // version made by
    append_le(central, 20, 2);  // version needed
    append_le(central, 0, 2);
    append_le(central, method, 2);
    append_le(central, 0, 4);
    append_le(central, crc, 4);
    append_le(central, data.size(), 4);
    append_le(central, m.content.size(), 4);
    append_le(central, m.name.size(), 2);
    append_le(central, 0, 2);  // extra
    append_le(central, 0, 2);  // comment
    append_le(central, 0, 2);  // disk
    append_le(central, 0, 2);  // internal attributes
    append_le(central, 0, 4);  // external attributes
    append_le(central, static_cast<uint64_t>(local_offset), 4);
    central.insert(central.end(), m.name.begin(), m.name.end());
  }
  const size_t central_offset = zip.bytes.size();
  append(zip.bytes, central);
  zip.eocd_offset = static_cast<int64_t>(zip.bytes.size());
  append_le(zip.bytes, 0x06054b50, 4);
  append_le(zip.bytes, 0, 4);  // disk numbers
  append_le(zip.bytes, members.size(), 2);
  append_le(zip.bytes, members.size(), 2);
  append_le(zip.bytes, central.size(), 4);
  append_le(zip.bytes, central_offset, 4);
  append_le(zip.bytes, 0, 2);  // comment
  return zip;
}

// Runs `statement`, expects exactly error type E, and returns it for the caller's checks.
template <class E, class F>
std::optional<E> thrown(F&& statement) {
  try {
    statement();
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a different type: " << e.what();
    return std::nullopt;
  }
  ADD_FAILURE() << "did not throw";
  return std::nullopt;
}

// A FormatError for `path` at `offset` whose message names both and contains `text`.
template <class F>
void expect_format_error(F&& statement, const std::string& path, int64_t offset,
                         const std::string& text) {
  const std::optional<FormatError> e = thrown<FormatError>(statement);
  if (!e) return;
  EXPECT_EQ(e->path(), path);
  EXPECT_EQ(e->offset(), offset) << e->what();
  EXPECT_THAT(e->what(), ::testing::HasSubstr(path));
  EXPECT_THAT(e->what(), ::testing::HasSubstr("offset " + std::to_string(offset)));
  EXPECT_THAT(e->what(), ::testing::HasSubstr(text));
}

}  // namespace tandem::fixtures

// Names the failing call site in the report, not the helper.
#define EXPECT_FORMAT_ERROR(statement, path, offset, text)                                   \
  do {                                                                                       \
    SCOPED_TRACE(#statement);                                                                \
    ::tandem::fixtures::expect_format_error([&] { (void)(statement); }, path, offset, text); \
  } while (0)
