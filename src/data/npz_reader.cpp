// .npz = a ZIP archive of .npy members (numpy.savez / savez_compressed). We parse the ZIP by
// hand: the end-of-central-directory record (EOCD) at the tail points to the central directory,
// whose entries hold the authoritative sizes, CRCs and local-header offsets. Local headers are
// read only to find where a member's data starts, because numpy writes them with zip64
// placeholder sizes (0xFFFFFFFF, "force_zip64") even for small members.
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/input_file.h"
#include "data/byte_source.h"
#include "tandem/datasets.h"

namespace tandem {
namespace {

constexpr uint32_t kEocdSignature = 0x06054b50;          // "PK\5\6"
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;  // "PK\6\7"
constexpr uint32_t kCentralSignature = 0x02014b50;       // "PK\1\2"
constexpr uint32_t kLocalSignature = 0x04034b50;         // "PK\3\4"
constexpr int64_t kEocdSize = 22, kCentralSize = 46, kLocalSize = 30;
constexpr int64_t kMaxCommentSize = 0xFFFF;

struct ZipMember {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed_size = 0, size = 0;
  int64_t local_offset = 0;  // of its local header
  int64_t entry_offset = 0;  // of its central-directory entry, for errors
};

uint32_t le(const std::vector<uint8_t>& b, int64_t at, int width) {
  uint32_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = v << 8 | b[at + i];
  return v;
}

std::string hex32(uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

std::string method_name(uint16_t method) {
  switch (method) {
    case 0:
      return "stored";
    case 8:
      return "deflate";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "lzma";
    case 93:
      return "zstd";
    default:
      return "unknown";
  }
}

struct CentralDirectory {
  std::vector<ZipMember> members;
  int64_t offset = 0;
};

CentralDirectory read_central_directory(const std::vector<uint8_t>& b, const std::string& path) {
  const int64_t size = static_cast<int64_t>(b.size());
  int64_t eocd = -1;  // the record ends with a comment of up to 64 KiB, so search backwards
  for (int64_t at = size - kEocdSize; at >= 0 && at >= size - kEocdSize - kMaxCommentSize; --at) {
    if (le(b, at, 4) == kEocdSignature) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) {
    throw FormatError(path, size,
                      "no ZIP end-of-central-directory record; not a .npz archive, or truncated");
  }
  const uint32_t entries = le(b, eocd + 10, 2), cd_size = le(b, eocd + 12, 4);
  const uint32_t cd_offset = le(b, eocd + 16, 4);
  const bool zip64_locator = eocd >= 20 && le(b, eocd - 20, 4) == kZip64LocatorSignature;
  if (zip64_locator || entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    throw FormatError(path, eocd,
                      "zip64 archive (over 4 GiB or 65535 members) is not supported; save the "
                      "arrays in smaller .npz files");
  }
  if (le(b, eocd + 4, 2) != 0 || le(b, eocd + 6, 2) != 0 || le(b, eocd + 8, 2) != entries) {
    throw FormatError(path, eocd + 4, "multi-disk ZIP archives are not supported");
  }
  if (int64_t{cd_offset} + cd_size > eocd) {
    throw FormatError(path, eocd + 16,
                      "central directory at " + std::to_string(cd_offset) + " (+" +
                          std::to_string(cd_size) + " bytes) overruns the end record at " +
                          std::to_string(eocd) + "; truncated archive?");
  }

  CentralDirectory cd{{}, cd_offset};
  int64_t at = cd_offset;
  for (uint32_t i = 0; i < entries; ++i) {
    if (at + kCentralSize > eocd || le(b, at, 4) != kCentralSignature) {
      throw FormatError(path, at, "bad central-directory entry " + std::to_string(i));
    }
    const int64_t name_len = le(b, at + 28, 2), extra_len = le(b, at + 30, 2);
    const int64_t comment_len = le(b, at + 32, 2);
    if (at + kCentralSize + name_len > eocd) {
      throw FormatError(path, at, "central-directory entry " + std::to_string(i) + " overruns");
    }
    ZipMember m;
    m.name.assign(b.begin() + at + kCentralSize, b.begin() + at + kCentralSize + name_len);
    m.flags = le(b, at + 8, 2);
    m.method = le(b, at + 10, 2);
    m.crc = le(b, at + 16, 4);
    m.compressed_size = le(b, at + 20, 4);
    m.size = le(b, at + 24, 4);
    m.local_offset = le(b, at + 42, 4);
    m.entry_offset = at;
    if (m.compressed_size == 0xFFFFFFFF || m.size == 0xFFFFFFFF || m.local_offset == 0xFFFFFFFF) {
      throw FormatError(path, at, "member " + m.name + " needs zip64 (over 4 GiB): not supported");
    }
    cd.members.push_back(std::move(m));
    at += kCentralSize + name_len + extra_len + comment_len;
  }
  return cd;
}

// A member's content, read piece by piece: stored bytes straight from the archive, deflated
// ones inflated only as far as they are asked for.
class MemberReader {
 public:
  MemberReader(std::span<const uint8_t> data, uint16_t method, const std::string& path,
               int64_t data_offset) {
    if (method == 8) {
      inflater_.emplace(data, detail::InflateStream::Wrapper::raw, path, data_offset);
    } else {
      stored_ = data;
    }
  }
  size_t read(uint8_t* dst, size_t n) {
    if (inflater_) return inflater_->read(dst, n);
    const size_t got = std::min(n, stored_.size() - at_);
    std::copy_n(stored_.data() + at_, got, dst);
    at_ += got;
    return got;
  }
  size_t read_append(std::vector<uint8_t>& out, size_t n, const std::string& what,
                     const std::string& path) {
    if (inflater_) return inflater_->read_append(out, n, what);
    const size_t got = std::min(n, stored_.size() - at_);
    const size_t start = out.size();
    allocating(path, what, start + got, [&] { out.resize(start + got); });
    read(out.data() + start, got);
    return got;
  }
  // True when the content ends here (for deflate: its end marker comes next).
  bool at_end() {
    if (inflater_) return inflater_->skip_rest(1) == 0;
    return at_ == stored_.size();
  }
  int64_t offset() const { return inflater_ ? inflater_->offset() : 0; }

 private:
  std::optional<detail::InflateStream> inflater_;
  std::span<const uint8_t> stored_;
  size_t at_ = 0;
};

// Checks the member's local header, method and sizes; returns where its (possibly
// compressed) data starts in the archive.
int64_t member_data_offset(const std::vector<uint8_t>& b, const ZipMember& m,
                           const std::string& path) {
  const int64_t size = static_cast<int64_t>(b.size());
  const int64_t local = m.local_offset;
  if (local + kLocalSize > size || le(b, local, 4) != kLocalSignature) {
    throw FormatError(path, local, "no local header for member " + m.name);
  }
  const int64_t data_offset = local + kLocalSize + le(b, local + 26, 2) + le(b, local + 28, 2);
  if (m.flags & 0x1) throw FormatError(path, local + 6, "member " + m.name + " is encrypted");
  if (data_offset + static_cast<int64_t>(m.compressed_size) > size) {
    throw FormatError(path, size,
                      "member " + m.name + " needs " + std::to_string(m.compressed_size) +
                          " bytes from offset " + std::to_string(data_offset) +
                          "; truncated archive");
  }
  if (m.method == 0) {
    if (m.compressed_size != m.size) {
      throw FormatError(path, m.entry_offset, "stored member " + m.name + " has differing sizes");
    }
  } else if (m.method == 8) {
    if (m.size > detail::max_inflated_size(m.compressed_size)) {
      throw FormatError(path, m.entry_offset + 24,
                        "member " + m.name + " claims " + std::to_string(m.size) + " bytes from " +
                            std::to_string(m.compressed_size) +
                            " compressed bytes, beyond what deflate can encode");
    }
  } else {
    throw FormatError(path, m.entry_offset + 10,
                      "member " + m.name + " uses compression method " + std::to_string(m.method) +
                          " (" + method_name(m.method) + "); only stored (0) and deflate (8)");
  }
  return data_offset;
}

void check_crc(uint32_t crc, const ZipMember& m, const std::string& path, int64_t data_offset) {
  if (crc != m.crc) {
    throw FormatError(path, data_offset,
                      "CRC32 mismatch in member " + m.name + ": archive says " + hex32(m.crc) +
                          ", content has " + hex32(crc) + "; the file is corrupt");
  }
}

// Parses the .npy header dict, e.g. "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }"
// (numpy's own writer; Python 2 era files may write dims as "60000L").
class NpyHeader {
 public:
  NpyHeader(std::string_view text, std::function<FormatError(size_t, const std::string&)> error)
      : text_(text), error_(std::move(error)) {}

  void parse(std::string& descr, bool& fortran_order, Shape& shape) {
    bool seen[3] = {false, false, false};
    expect('{');
    while (!accept('}')) {
      const size_t key_at = pos_;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        descr = string_literal();
        seen[0] = true;
      } else if (key == "fortran_order") {
        fortran_order = boolean();
        seen[1] = true;
      } else if (key == "shape") {
        shape = tuple();
        seen[2] = true;
      } else {
        throw error_(key_at, "unexpected key '" + key + "' in the .npy header");
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    if (!seen[0] || !seen[1] || !seen[2]) {
      throw error_(0, ".npy header lacks 'descr', 'fortran_order' or 'shape'");
    }
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) throw error_(pos_, std::string("expected '") + c + "' in the .npy header");
  }
  std::string string_literal() {
    skip_space();
    const char quote = pos_ < text_.size() ? text_[pos_] : 0;
    const size_t end = quote == '\'' || quote == '"' ? text_.find(quote, pos_ + 1) : text_.npos;
    if (end == text_.npos) throw error_(pos_, "expected a string in the .npy header");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (bool value : {true, false}) {
      const std::string_view word = value ? "True" : "False";
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    throw error_(pos_, "expected True or False in the .npy header");
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (!accept(')')) {
      skip_space();
      const size_t start = pos_;
      int64_t dim = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (__builtin_mul_overflow(dim, 10, &dim) ||
            __builtin_add_overflow(dim, text_[pos_] - '0', &dim)) {
          throw error_(start, "dimension overflows 64 bits in the .npy header");
        }
        ++pos_;
      }
      if (pos_ == start) throw error_(pos_, "expected a dimension in the .npy shape");
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
      shape.push_back(dim);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::function<FormatError(size_t, const std::string&)> error_;
};

// .npy member -> array: magic "\x93NUMPY", version, little-endian header length, header dict
// padded with spaces to a 16/64-byte boundary, then the raw C-order body. The header's shape
// is checked against the member's declared size before the body is allocated.
ByteArray read_npy(const std::vector<uint8_t>& archive, const ZipMember& m,
                   const std::string& path) {
  const int64_t data_offset = member_data_offset(archive, m, path);
  const std::span<const uint8_t> data(archive.data() + data_offset, m.compressed_size);
  const bool stored = m.method == 0;
  // Stored: the CRC costs nothing up front, and damage then reads as damage.
  if (stored) check_crc(crc32_z(0, data.data(), data.size()), m, path, data_offset);
  const std::string& name = m.name;
  // Offsets inside a deflated member have no place in the file; name them in the text instead.
  auto error_at = [&](size_t pos, const std::string& what) {
    if (stored)
      return FormatError(path, data_offset + static_cast<int64_t>(pos), name + ": " + what);
    return FormatError(path, data_offset,
                       name + ", byte " + std::to_string(pos) + " after inflating: " + what);
  };
  MemberReader reader(data, m.method, path, data_offset);
  uLong crc = crc32_z(0, nullptr, 0);

  static constexpr uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  uint8_t preamble[12] = {};
  const size_t got = reader.read(preamble, 10);
  if (got < 10 || !std::equal(std::begin(kMagic), std::end(kMagic), preamble)) {
    throw error_at(0, "not a .npy member (no \\x93NUMPY magic)");
  }
  const int major = preamble[6];
  // 3.0 differs from 2.0 only in allowing UTF-8 in the header, which we do not need to decode.
  if (major < 1 || major > 3) {
    throw error_at(6, ".npy version " + std::to_string(major) + "." + std::to_string(preamble[7]) +
                          " is not supported; only 1.0, 2.0 and 3.0");
  }
  const size_t header_start = major == 1 ? 10 : 12;
  if (header_start > 10) {
    if (const size_t more = reader.read(preamble + 10, 2); more < 2) {
      throw error_at(10 + more, "truncated .npy preamble");
    }
  }
  crc = crc32_z(crc, preamble, header_start);
  uint64_t header_len = 0;
  for (int i = (major == 1 ? 2 : 4) - 1; i >= 0; --i)
    header_len = header_len << 8 | preamble[8 + i];
  if (header_start + header_len > m.size) {
    throw error_at(m.size, ".npy header of " + std::to_string(header_len) +
                               " bytes runs past the member's end");
  }
  constexpr uint64_t kMaxHeader = kMiB;  // numpy writes a few hundred bytes
  if (header_len > kMaxHeader) {
    throw error_at(8, ".npy header of " + std::to_string(header_len) + " bytes is over the " +
                          describe_bytes(kMaxHeader) + " this reader accepts");
  }
  std::vector<uint8_t> header;
  if (reader.read_append(header, header_len, name + "'s .npy header", path) < header_len) {
    throw error_at(header_start + header.size(), "truncated .npy header");
  }
  crc = crc32_z(crc, header.data(), header.size());
  const std::string_view text(reinterpret_cast<const char*>(header.data()), header.size());
  std::string descr;
  bool fortran_order = false;
  Shape shape;
  NpyHeader(text, [&](size_t pos, const std::string& what) {
    return error_at(header_start + pos, what);
  }).parse(descr, fortran_order, shape);

  if (descr != "|u1" && descr != "<u1" && descr != ">u1" && descr != "|b1") {
    throw error_at(header_start,
                   "dtype '" + descr + "' is not supported; only uint8 ('|u1') or bool ('|b1')");
  }
  if (fortran_order) {
    throw error_at(header_start,
                   "fortran_order True is not supported; save a C-order array "
                   "(np.ascontiguousarray)");
  }
  int64_t count = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(count, d, &count)) throw error_at(header_start, "shape overflows");
  }
  const uint64_t body_start = header_start + header_len;
  const int64_t present = static_cast<int64_t>(m.size - body_start);
  if (present != count) {
    throw error_at(m.size, "shape " + shape_to_string(shape) + " needs " + std::to_string(count) +
                               " bytes, the member holds " + std::to_string(present));
  }
  std::vector<uint8_t> body;
  const size_t body_got =
      reader.read_append(body, count, name + "'s body of shape " + shape_to_string(shape), path);
  if (static_cast<int64_t>(body_got) != count || !reader.at_end()) {
    const bool short_read = static_cast<int64_t>(body_got) != count;
    throw FormatError(path, reader.offset(),
                      short_read
                          ? "deflate data of member " + name + " inflates to " +
                                std::to_string(body_start + body_got) +
                                " bytes but the archive declares " + std::to_string(m.size)
                          : "deflate data of member " + name + " inflates to more than the " +
                                std::to_string(m.size) + " bytes the archive declares");
  }
  if (!stored) check_crc(crc32_z(crc, body.data(), body.size()), m, path, data_offset);
  return ByteArray(std::move(shape), std::move(body));
}

}  // namespace

ByteArray read_npz_array(const std::string& path, const std::string& name) {
  // The whole archive (its real size, capped: ZIP without zip64 ends at 4 GiB).
  const std::vector<uint8_t> archive = InputFile(path, 4 * kGiB, ".npz archive").read_all();
  const CentralDirectory cd = read_central_directory(archive, path);
  const std::string member_name = name + ".npy";
  for (const ZipMember& m : cd.members) {
    if (m.name != member_name) continue;
    return read_npy(archive, m, path);
  }
  std::string present;
  for (const ZipMember& m : cd.members) present += (present.empty() ? "" : ", ") + m.name;
  throw FormatError(path, cd.offset,
                    "no member " + member_name +
                        " in the archive; it holds: " + (present.empty() ? "(nothing)" : present));
}

}  // namespace tandem
