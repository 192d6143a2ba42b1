// IDX, the format of the MNIST family (http://yann.lecun.com/exdb/mnist/):
//   offset 0  00 00        magic
//   offset 2  type         0x08 uint8 (the only one we read), 0x09 int8, 0x0B int16,
//                          0x0C int32, 0x0D float32, 0x0E float64
//   offset 3  ndims        1..4 here (MNIST uses 1 for labels, 3 for images)
//   offset 4  dims         ndims big-endian uint32
//   then      body         product(dims) elements, row-major, nothing after it
#include <string>

#include "data/byte_source.h"
#include "tandem/datasets.h"

namespace tandem {
namespace {

constexpr int kMaxRank = 4;
constexpr uint8_t kTypeUint8 = 0x08;

std::string hex_byte(uint8_t b) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 0xF];
}

std::string type_name(uint8_t type) {
  switch (type) {
    case 0x08:
      return "uint8";
    case 0x09:
      return "int8";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "not an IDX type";
  }
}

uint32_t read_be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

}  // namespace

ByteArray read_idx(const std::string& path) {
  detail::FileBytes file = detail::read_file_maybe_gzipped(path);
  std::vector<uint8_t>& bytes = file.bytes;
  const int64_t size = static_cast<int64_t>(bytes.size());
  // After gunzip, offsets count decompressed bytes; say so, or they mislead a hex dump.
  const std::string where = file.was_gzipped ? " (offsets are after gunzip)" : "";
  auto error_at = [&](int64_t offset, const std::string& what) {
    return FormatError(path, offset, what + where);
  };

  if (size < 4) {
    throw error_at(size, "IDX header needs 4 bytes, the file has " + std::to_string(size));
  }
  if (bytes[0] != 0 || bytes[1] != 0) {
    throw error_at(0, "bad IDX magic " + hex_byte(bytes[0]) + " " + hex_byte(bytes[1]) +
                          ", expected 0x00 0x00; not an IDX file");
  }
  if (bytes[2] != kTypeUint8) {
    throw error_at(2, "IDX element type " + hex_byte(bytes[2]) + " (" + type_name(bytes[2]) +
                          ") is not supported; only 0x08 (uint8)");
  }
  const int rank = bytes[3];
  if (rank == 0 || rank > kMaxRank) {
    throw error_at(
        3, "IDX rank " + std::to_string(rank) + " is out of range 1.." + std::to_string(kMaxRank));
  }
  const int64_t header_size = 4 + 4 * int64_t{rank};
  if (size < header_size) {
    throw error_at(size, "IDX header with " + std::to_string(rank) + " dims needs " +
                             std::to_string(header_size) + " bytes, the file has " +
                             std::to_string(size));
  }

  Shape shape(rank);
  int64_t count = 1;  // product(dims); a 0 dim is a valid empty array
  for (int i = 0; i < rank; ++i) {
    shape[i] = read_be32(bytes.data() + 4 + 4 * i);
    if (__builtin_mul_overflow(count, shape[i], &count)) {
      throw error_at(4 + 4 * i, "IDX dims overflow 64 bits at dim " + std::to_string(i) + " (" +
                                    std::to_string(shape[i]) + ")");
    }
  }
  const int64_t present = size - header_size;
  if (present < count) {
    throw error_at(size, "truncated IDX body: shape " + shape_to_string(shape) + " needs " +
                             std::to_string(count) + " bytes, only " + std::to_string(present) +
                             " present");
  }
  if (present > count) {
    throw error_at(header_size + count,
                   std::to_string(present - count) +
                       " bytes of trailing garbage after the IDX body of shape " +
                       shape_to_string(shape));
  }

  // Drop the header in place (a memmove, no second copy of a 47 MB body).
  bytes.erase(bytes.begin(), bytes.begin() + header_size);
  return ByteArray(std::move(shape), std::move(bytes));
}

}  // namespace tandem
