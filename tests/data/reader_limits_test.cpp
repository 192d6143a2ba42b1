// The dataset readers check every size against the bytes present before they allocate:
// a header's claim costs memory only as the file's data backs it up (gzip and deflate are
// inflated as a stream, never to a size a header or trailer claims), and a FIFO is refused,
// by name, without blocking.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "fixture_files.h"
#include "peak_memory.h"
#include "tandem/datasets.h"

namespace tandem {
namespace {

using fixtures::Bytes;
using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(gen());
  return out;
}

// gzip of `head` followed by `zeros` zero bytes, compressed as a stream (the zeros are never
// held in memory).
Bytes gzip_with_zeros(const Bytes& head, int64_t zeros) {
  z_stream s{};
  if (deflateInit2(&s, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  Bytes out, chunk(1 << 16), zero_block(1 << 20, 0);
  auto pump = [&](const uint8_t* in, size_t n, int flush) {
    s.next_in = const_cast<Bytef*>(in);
    s.avail_in = static_cast<uInt>(n);
    do {
      s.next_out = chunk.data();
      s.avail_out = static_cast<uInt>(chunk.size());
      deflate(&s, flush);
      out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - s.avail_out));
    } while (s.avail_out == 0);
  };
  pump(head.data(), head.size(), Z_NO_FLUSH);
  for (int64_t left = zeros; left > 0; left -= static_cast<int64_t>(zero_block.size())) {
    pump(zero_block.data(), std::min<int64_t>(left, zero_block.size()), Z_NO_FLUSH);
  }
  pump(nullptr, 0, Z_FINISH);
  deflateEnd(&s);
  return out;
}

class ReaderLimitsTest : public ::testing::Test {
 protected:
  fixtures::TempDir dir;
  std::string write(const std::string& name, const Bytes& bytes) {
    const std::string path = dir.file(name);
    fixtures::write_file(path, bytes);
    return path;
  }
};

// Overwrites the uncompressed size of the archive's one central-directory entry ("x.npy",
// the last 46 + 5 bytes before the end record); returns the field's offset.
int64_t forge_member_size(fixtures::ZipArchive& zip, uint32_t size) {
  const int64_t field = zip.eocd_offset - 46 - 5 + 24;
  for (int i = 0; i < 4; ++i) zip.bytes[field + i] = static_cast<uint8_t>(size >> (8 * i));
  return field;
}

// Defect: a .gz IDX file was inflated whole before its header was checked (a 1.9 MB file
// took 2 GB). Now the header comes from the first inflated bytes.
TEST_F(ReaderLimitsTest, GzipIdxHeaderIsCheckedBeforeTheBodyIsInflated) {
  const Bytes bad_magic = {'P', 'K', 8, 1, 0, 0, 0, 4};
  const std::string path = write("bomb.gz", gzip_with_zeros(bad_magic, 96 * kMiB));
  const auto m = test::measure_in_child([&] { read_idx(path); });
  EXPECT_EQ(m.error_type, "FormatError") << m.message;
  EXPECT_THAT(m.message, HasSubstr(path));
  EXPECT_THAT(m.message, HasSubstr("bad IDX magic"));
  EXPECT_LT(m.peak_growth_bytes, 16 * kMiB);
}

// Defect: the gzip trailer's size field (ISIZE) was trusted as the output size to reserve.
TEST_F(ReaderLimitsTest, ForgedGzipSizeFieldReservesNothing) {
  const Bytes body = random_bytes(256 * 1024, 1);  // incompressible: ~256 KiB of gzip
  Bytes gz = fixtures::gzip(fixtures::idx_bytes({static_cast<int64_t>(body.size())}, body));
  const uint32_t forged = 200u << 20;  // 200 MiB, within 1032 x the compressed size
  for (int i = 0; i < 4; ++i) gz[gz.size() - 4 + i] = static_cast<uint8_t>(forged >> (8 * i));
  const std::string path = write("isize.gz", gz);
  const auto m = test::measure_in_child([&] { read_idx(path); });
  EXPECT_EQ(m.error_type, "FormatError") << m.message;
  EXPECT_THAT(m.message, HasSubstr("incorrect length check"));
  EXPECT_LT(m.peak_growth_bytes, 32 * kMiB);
}

// A header claiming 512 MiB over 1 MiB of real (incompressible) data: memory follows the
// data, and the error says how much was there.
TEST_F(ReaderLimitsTest, GzipIdxClaimCostsMemoryOnlyAsTheDataArrives) {
  const Bytes body = random_bytes(kMiB, 2);
  const std::string path =
      write("claim.gz", fixtures::gzip(fixtures::idx_bytes({512 * kMiB}, body)));
  const auto m = test::measure_in_child([&] { read_idx(path); });
  EXPECT_EQ(m.error_type, "FormatError") << m.message;
  EXPECT_THAT(m.message, HasSubstr("needs 536870912 bytes, only 1048576 present"));
  EXPECT_LT(m.peak_growth_bytes, 32 * kMiB);
}

TEST_F(ReaderLimitsTest, GzipIdxBeyondWhatDeflateCanHoldIsRefusedUpFront) {
  const std::string path =
      write("tiny.gz", fixtures::gzip(fixtures::idx_bytes({60000, 28, 28}, {})));
  EXPECT_FORMAT_ERROR(read_idx(path), path, 4, "more than");
  const std::string huge = write("huge", fixtures::idx_bytes({0x7FFFFFFF, 0x7FFFFFFF}, {}));
  EXPECT_FORMAT_ERROR(read_idx(huge), huge, 12, "truncated IDX body");
}

TEST_F(ReaderLimitsTest, GzipIdxWithTrailingContentIsRefused) {
  const Bytes good = fixtures::idx_bytes({4}, {1, 2, 3, 4});
  Bytes longer = good;
  fixtures::append(longer, {9, 9});
  const std::string path = write("long.gz", fixtures::gzip(longer));
  EXPECT_FORMAT_ERROR(read_idx(path), path, static_cast<int64_t>(good.size()),
                      "2 bytes of trailing garbage");
}

// A deflated .npz member whose central-directory size lies (200 MiB for a 256 KiB array):
// the .npy header's shape is checked against it before anything is inflated into memory.
TEST_F(ReaderLimitsTest, NpzMemberSizeIsCheckedAgainstTheNpyShapeBeforeAllocating) {
  const Bytes body = random_bytes(256 * 1024, 3);
  fixtures::ZipArchive zip = fixtures::zip_archive(
      {{"x.npy", fixtures::npy_bytes({static_cast<int64_t>(body.size())}, body), true}});
  forge_member_size(zip, 200u << 20);
  const std::string path = write("lie.npz", zip.bytes);
  const auto m = test::measure_in_child([&] { read_npz_array(path, "x"); });
  EXPECT_EQ(m.error_type, "FormatError") << m.message;
  EXPECT_THAT(m.message, HasSubstr("shape (262144,) needs 262144 bytes, the member holds"));
  EXPECT_LT(m.peak_growth_bytes, 32 * kMiB);
}

// Shape and size agree on 200 MiB but the deflate data holds 256 KiB: memory follows the data.
TEST_F(ReaderLimitsTest, NpzConsistentLieCostsMemoryOnlyAsTheDataArrives) {
  const Bytes body = random_bytes(256 * 1024, 4);
  const int64_t claimed = 200 * kMiB;
  const Bytes npy = fixtures::npy_bytes({claimed}, body);
  fixtures::ZipArchive zip = fixtures::zip_archive({{"x.npy", npy, true}});
  forge_member_size(zip, static_cast<uint32_t>(npy.size() - body.size() + claimed));
  const std::string path = write("lie2.npz", zip.bytes);
  const auto m = test::measure_in_child([&] { read_npz_array(path, "x"); });
  EXPECT_EQ(m.error_type, "FormatError") << m.message;
  EXPECT_THAT(m.message, HasSubstr("deflate data"));
  EXPECT_LT(m.peak_growth_bytes, 32 * kMiB);
}

TEST_F(ReaderLimitsTest, NpzMemberClaimBeyondDeflateRatioIsRefused) {
  fixtures::ZipArchive zip =
      fixtures::zip_archive({{"x.npy", fixtures::npy_bytes({4}, {1, 2, 3, 4}), true}});
  const int64_t entry = forge_member_size(zip, 0xEEEEEEEE);  // ~4 GB from a few bytes
  const std::string path = write("ratio.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x"), path, entry, "beyond what deflate");
}

TEST_F(ReaderLimitsTest, StoredNpzDamageStillReadsAsACrcMismatch) {
  Bytes npy = fixtures::npy_bytes({4}, {1, 2, 3, 4});
  fixtures::ZipArchive zip = fixtures::zip_archive({{"x.npy", npy}});
  zip.bytes[zip.data_offsets[0] + 12] = '#';  // inside the header dict
  const std::string path = write("crc.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x"), path, zip.data_offsets[0], "CRC32 mismatch");
}

// Defect: a FIFO given as a data file hung the reader (open() blocks until a writer comes).
TEST_F(ReaderLimitsTest, FifoIdxFileIsRefusedWithoutBlocking) {
  const std::string fifo = dir.file("train-images-idx3-ubyte");
  test::expect_fifo_refused(fifo, [&] { read_idx(fifo); });
}

TEST_F(ReaderLimitsTest, FifoNpzArchiveIsRefusedWithoutBlocking) {
  const std::string fifo = dir.file("mnist.npz");
  test::expect_fifo_refused(fifo, [&] { read_npz_array(fifo, "x_train"); });
  const std::string message =
      test::io_error_without_blocking(fifo, [&] { mnist::load_data(fifo); });
  EXPECT_THAT(message, HasSubstr(fifo));
}

TEST_F(ReaderLimitsTest, DatasetDirectoryOfFifosIsRefusedWithoutBlocking) {
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    test::make_fifo(dir.file(name));
  }
  // Whichever of the four is read first is named.
  const std::string first = dir.file("train-images-idx3-ubyte");
  const std::string message =
      test::io_error_without_blocking(first, [&] { fashion_mnist::load_data(dir.path()); });
  EXPECT_THAT(message, HasSubstr(dir.path() + "/t"));
  EXPECT_THAT(message, HasSubstr("-ubyte: is a FIFO"));
}

TEST_F(ReaderLimitsTest, DeviceIsRefused) {
  const auto e = fixtures::thrown<IoError>([&] { read_idx("/dev/zero"); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr("/dev/zero"));
  EXPECT_THAT(e->what(), HasSubstr("character device"));
}

}  // namespace
}  // namespace tandem
