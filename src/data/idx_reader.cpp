// IDX, the format of the MNIST family (http://yann.lecun.com/exdb/mnist/):
//   offset 0  00 00        magic
//   offset 2  type         0x08 uint8 (the only one we read), 0x09 int8, 0x0B int16,
//                          0x0C int32, 0x0D float32, 0x0E float64
//   offset 3  ndims        1..4 here (MNIST uses 1 for labels, 3 for images)
//   offset 4  dims         ndims big-endian uint32
//   then      body         product(dims) elements, row-major, nothing after it
#include <functional>
#include <string>

#include "core/input_file.h"
#include "data/byte_source.h"
#include "tandem/datasets.h"
namespace tandem {
namespace {

constexpr int kMaxRank = 4;
constexpr uint8_t kTypeUint8 = 0x08;
// The largest body we accept: the largest MNIST-family file (EMNIST ByClass images) is 0.5 GB.
constexpr uint64_t kMaxBodyBytes = 4 * kGiB;
constexpr int64_t kMaxHeaderBytes = 4 + 4 * kMaxRank;

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

// The header, pulled from the first (decompressed) bytes: shape and header size.
struct IdxHeader {
  Shape shape;
  int64_t size = 0;   // bytes of header
  int64_t count = 0;  // product(shape): bytes of body
};

using ErrorAt = std::function<FormatError(int64_t, const std::string&)>;

IdxHeader read_header(const std::function<size_t(uint8_t*, size_t)>& pull,
                      const ErrorAt& error_at) {
  uint8_t bytes[kMaxHeaderBytes];
  const int64_t got = static_cast<int64_t>(pull(bytes, 4));
  if (got < 4) {
    throw error_at(got, "IDX header needs 4 bytes, the file has " + std::to_string(got));
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
  IdxHeader h;
  h.size = 4 + 4 * int64_t{rank};
  const int64_t have = 4 + static_cast<int64_t>(pull(bytes + 4, 4 * rank));
  if (have < h.size) {
    throw error_at(have, "IDX header with " + std::to_string(rank) + " dims needs " +
                             std::to_string(h.size) + " bytes, the file has " +
                             std::to_string(have));
  }
  h.shape.resize(rank);
  h.count = 1;  // product(dims); a 0 dim is a valid empty array
  for (int i = 0; i < rank; ++i) {
    h.shape[i] = read_be32(bytes + 4 + 4 * i);
    if (__builtin_mul_overflow(h.count, h.shape[i], &h.count)) {
      throw error_at(4 + 4 * i, "IDX dims overflow 64 bits at dim " + std::to_string(i) + " (" +
                                    std::to_string(h.shape[i]) + ")");
    }
  }
  return h;
}

void check_cap(const IdxHeader& h, const ErrorAt& error_at) {
  if (static_cast<uint64_t>(h.count) > kMaxBodyBytes) {
    throw error_at(4, "IDX shape " + shape_to_string(h.shape) + " needs " +
                          describe_bytes(h.count) + ", more than the " +
                          describe_bytes(kMaxBodyBytes) + " this reader accepts");
  }
}

ByteArray read_plain(const InputFile& file, const ErrorAt& error_at) {
  uint64_t at = 0;
  const IdxHeader h = read_header(
      [&](uint8_t* dst, size_t n) {
        const size_t got = file.read_some(at, dst, n);
        at += got;
        return got;
      },
      error_at);
  // The body must be exactly what the file holds after the header: checked before allocating.
  const int64_t size = static_cast<int64_t>(file.size());
  const int64_t present = size - h.size;
  if (present < h.count) {
    throw error_at(size, "truncated IDX body: shape " + shape_to_string(h.shape) + " needs " +
                             std::to_string(h.count) + " bytes, only " + std::to_string(present) +
                             " present");
  }
  if (present > h.count) {
    throw error_at(h.size + h.count, std::to_string(present - h.count) +
                                         " bytes of trailing garbage after the IDX body of shape " +
                                         shape_to_string(h.shape));
  }
  check_cap(h, error_at);
  std::vector<uint8_t> body =
      allocating(file.path(), "the IDX body of shape " + shape_to_string(h.shape), h.count,
                 [&] { return std::vector<uint8_t>(h.count); });
  file.read_exact(h.size, body.data(), body.size());
  return ByteArray(h.shape, std::move(body));
}

ByteArray read_gzipped(const InputFile& file, const ErrorAt& error_at) {
  const std::vector<uint8_t> compressed = file.read_all();
  detail::InflateStream stream(compressed, detail::InflateStream::Wrapper::gzip, file.path());
  IdxHeader h;
  try {
    h = read_header([&](uint8_t* dst, size_t n) { return stream.read(dst, n); }, error_at);
    check_cap(h, error_at);
    if (static_cast<uint64_t>(h.count) > detail::max_inflated_size(compressed.size())) {
      throw error_at(4, "IDX shape " + shape_to_string(h.shape) + " needs " +
                            describe_bytes(h.count) + ", more than " +
                            std::to_string(compressed.size()) +
                            " bytes of gzip data can hold; the file is truncated or corrupt");
    }
  } catch (const FormatError& header_error) {
    // A corrupt stream can inflate to a wrong header before zlib notices: when the stream
    // fails soon after (inflated and discarded, no memory kept), that is the cause to report.
    constexpr uint64_t kLookAhead = 64 * kMiB;
    stream.skip_rest(kLookAhead);  // throws the stream's own FormatError
    throw;
  }
  // Inflate exactly the body the header allows; memory grows only as the data arrives.
  std::vector<uint8_t> body;
  const int64_t present = static_cast<int64_t>(stream.read_append(
      body, static_cast<size_t>(h.count), "the IDX body of shape " + shape_to_string(h.shape)));
  if (present < h.count) {
    throw error_at(h.size + present, "truncated IDX body: shape " + shape_to_string(h.shape) +
                                         " needs " + std::to_string(h.count) + " bytes, only " +
                                         std::to_string(present) + " present");
  }
  constexpr uint64_t kCountUpTo = 16 * kMiB;  // trailing bytes counted, not kept
  if (const uint64_t more = stream.skip_rest(kCountUpTo); more > 0) {
    throw error_at(h.size + h.count, (more >= kCountUpTo ? "over " : "") + std::to_string(more) +
                                         " bytes of trailing garbage after the IDX body of shape " +
                                         shape_to_string(h.shape));
  }
  return ByteArray(h.shape, std::move(body));
}

}  // namespace

ByteArray read_idx(const std::string& path) {
  const InputFile file(path, kMaxBodyBytes + kMaxHeaderBytes, "IDX file");
  uint8_t magic[2] = {0, 0};
  const size_t got = file.read_some(0, magic, 2);
  const bool gzipped = detail::is_gzip({magic, got});
  // After gunzip, offsets count decompressed bytes; say so, or they mislead a hex dump.
  const std::string where = gzipped ? " (offsets are after gunzip)" : "";
  const ErrorAt error_at = [&](int64_t offset, const std::string& what) {
    return FormatError(path, offset, what + where);
  };
  return gzipped ? read_gzipped(file, error_at) : read_plain(file, error_at);
}

}  // namespace tandem
