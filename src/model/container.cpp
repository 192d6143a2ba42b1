#include "model/container.h"

#include <zlib.h>

#include <cstring>

#include "core/atomic_file.h"
#include "core/input_file.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

constexpr char kMagic[8] = {'T', 'A', 'N', 'D', 'E', 'M', '\x01', '\n'};
constexpr size_t kPrefix = 16;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const std::string& in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(in[at + i])) << (8 * i);
  return v;
}

uint32_t crc_of(const std::string& bytes, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(bytes.data());
  // zlib takes uInt lengths; feed it in chunks.
  for (size_t done = 0; done < n;) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n - done, 1u << 30));
    crc = crc32(crc, p + done, chunk);
    done += chunk;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

const Section& Container::section(const std::string& name, const std::string& path) const {
  for (const Section& s : sections) {
    if (s.name == name) return s;
  }
  throw FormatError(path, 0, "missing section '" + name + "'");
}

std::string encode_container(Container c) {
  static_assert(sizeof(float) == 4);
  nlohmann::json sections = nlohmann::json::array();
  size_t floats = 0;
  for (const Section& s : c.sections) {
    sections.push_back({{"name", s.name}, {"count", s.values.size()}});
    floats += s.values.size();
  }
  c.header["sections"] = sections;
  const std::string header = c.header.dump();
  std::string out;
  out.reserve(kPrefix + header.size() + floats * 4 + 4);
  out.append(kMagic, sizeof kMagic);
  put_u32(out, kContainerVersion);
  put_u32(out, static_cast<uint32_t>(header.size()));
  out += header;
  for (const Section& s : c.sections) {
    // Little-endian hosts only (x86-64, aarch64): the bytes are the float32 values.
    out.append(reinterpret_cast<const char*>(s.values.data()), s.values.size() * 4);
  }
  put_u32(out, crc_of(out, out.size()));
  return out;
}

void write_container(const std::string& path, Container c) {
  write_file_atomically(path, encode_container(std::move(c)));
}

Container read_container(const std::string& path, const std::string& expected_kind) {
  return decode_container(read_container_file(path), path, expected_kind);
}

std::string read_container_file(const std::string& path) {
  return read_regular_file(path, kMaxContainerBytes, "tandem file");
}

Container decode_container(const std::string& bytes, const std::string& path,
                           const std::string& expected_kind) {
  if (bytes.size() < kPrefix + 4) {
    throw FormatError(
        path, static_cast<int64_t>(bytes.size()),
        "file too short for a tandem file (" + std::to_string(bytes.size()) + " bytes)");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    throw FormatError(path, 0, "not a tandem file (bad magic)");
  }
  const uint32_t version = get_u32(bytes, 8);
  if (version != kContainerVersion) {
    throw FormatError(path, 8,
                      "unsupported format version " + std::to_string(version) +
                          " (this build reads version " + std::to_string(kContainerVersion) + ")");
  }
  const size_t header_size = get_u32(bytes, 12);
  const size_t crc_at = bytes.size() - 4;
  if (kPrefix + header_size > crc_at) {
    throw FormatError(path, 12,
                      "header length " + std::to_string(header_size) +
                          " runs past the end of the file (truncated?)");
  }
  const uint32_t stored_crc = get_u32(bytes, crc_at);
  if (crc_of(bytes, crc_at) != stored_crc) {
    throw FormatError(path, static_cast<int64_t>(crc_at),
                      "checksum mismatch: the file is corrupt or truncated");
  }
  Container c;
  try {
    // A JSON value takes a few times its text: say so if that is more than there is.
    c.header = allocating(path, "the JSON header (" + std::to_string(header_size) + " bytes)",
                          header_size * 8, [&] {
                            return nlohmann::json::parse(bytes.begin() + kPrefix,
                                                         bytes.begin() + kPrefix + header_size);
                          });
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path, kPrefix, std::string("header is not valid JSON: ") + e.what());
  }
  if (!c.header.is_object()) throw FormatError(path, kPrefix, "header is not a JSON object");
  const nlohmann::json kind_json = c.header.value("kind", nlohmann::json(""));
  if (!kind_json.is_string()) throw FormatError(path, kPrefix, "header's 'kind' is not a string");
  const std::string kind = kind_json.get<std::string>();
  if (!expected_kind.empty() && kind != expected_kind) {
    throw FormatError(path, kPrefix, "holds a '" + kind + "', expected a '" + expected_kind + "'");
  }
  size_t at = kPrefix + header_size;
  const auto sections = c.header.find("sections");
  if (sections == c.header.end() || !sections->is_array()) {
    throw FormatError(path, kPrefix, "header lacks a valid section list");
  }
  for (const auto& s : *sections) {
    if (!s.is_object() || !s.contains("count") || !s.at("count").is_number_unsigned() ||
        !s.contains("name") || !s.at("name").is_string()) {
      throw FormatError(path, kPrefix,
                        "header lacks a valid section list: entry " + s.dump().substr(0, 80) +
                            " needs a \"name\" and a whole \"count\"");
    }
  }
  for (const auto& s : *sections) {
    const uint64_t count = s.at("count").get<uint64_t>();
    const std::string name = s.at("name").get<std::string>();
    // Sizes against the bytes present, before anything is allocated for them.
    if (count > (crc_at - at) / 4) {
      throw FormatError(path, static_cast<int64_t>(at),
                        "section '" + name + "' of " + std::to_string(count) +
                            " floats runs past the end of the file");
    }
    Section section{name, allocating(path, "section '" + name + "'", count * 4, [&] {
                      return std::vector<float>(static_cast<size_t>(count));
                    })};
    if (count > 0) std::memcpy(section.values.data(), bytes.data() + at, count * 4);
    at += count * 4;
    c.sections.push_back(std::move(section));
  }
  if (at != crc_at) {
    throw FormatError(path, static_cast<int64_t>(at),
                      std::to_string(crc_at - at) + " unexpected bytes after the last section");
  }
  return c;
}

}  // namespace tandem::detail
