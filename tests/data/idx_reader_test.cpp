#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixture_files.h"
#include "tandem/datasets.h"

namespace tandem {
namespace {

using fixtures::Bytes;
using ::testing::HasSubstr;

class IdxReaderTest : public ::testing::Test {
 protected:
  fixtures::TempDir dir;
  const Shape shape = {3, 2, 4};                          // (count, rows, cols)
  const Bytes body = fixtures::pattern_bytes(3 * 2 * 4);  // (24,)
  const Bytes good = fixtures::idx_bytes(shape, body);

  std::string write(const std::string& name, const Bytes& bytes) {
    const std::string path = dir.file(name);
    fixtures::write_file(path, bytes);
    return path;
  }
};

TEST_F(IdxReaderTest, ReadsPlainUint8) {
  const ByteArray a = read_idx(write("images-idx3-ubyte", good));
  EXPECT_EQ(a.shape(), shape);
  EXPECT_EQ(Bytes(a.values().begin(), a.values().end()), body);
}

TEST_F(IdxReaderTest, ReadsGzipByContentNotName) {
  // No .gz suffix: detection is by the 1f 8b magic.
  const ByteArray a = read_idx(write("images-idx3-ubyte", fixtures::gzip(good)));
  EXPECT_EQ(a.shape(), shape);
  EXPECT_EQ(Bytes(a.values().begin(), a.values().end()), body);
}

TEST_F(IdxReaderTest, ReadsConcatenatedGzipMembers) {
  // gzip(1) joins members; `cat a.gz b.gz` must read like one file.
  const Bytes head(good.begin(), good.begin() + 10), tail(good.begin() + 10, good.end());
  Bytes both = fixtures::gzip(head);
  fixtures::append(both, fixtures::gzip(tail));
  const ByteArray a = read_idx(write("joined.gz", both));
  EXPECT_EQ(Bytes(a.values().begin(), a.values().end()), body);
}

TEST_F(IdxReaderTest, ReadsLabelsAndEmptyArrays) {
  const ByteArray labels = read_idx(write("labels", fixtures::idx_bytes({5}, {0, 1, 2, 9, 4})));
  EXPECT_EQ(labels.shape(), Shape({5}));
  EXPECT_EQ(labels[3], 9);
  const ByteArray empty = read_idx(write("empty", fixtures::idx_bytes({0, 28, 28}, {})));
  EXPECT_EQ(empty.shape(), Shape({0, 28, 28}));
  EXPECT_TRUE(empty.empty());
}

TEST_F(IdxReaderTest, MissingFileIsIoErrorWithReason) {
  const std::string path = dir.file("nope-idx3-ubyte");
  const auto e = fixtures::thrown<IoError>([&] { read_idx(path); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path(), path);
  EXPECT_THAT(e->what(), HasSubstr(path));
  EXPECT_THAT(e->what(), HasSubstr("No such file"));
}

TEST_F(IdxReaderTest, DirectoryIsIoError) {
  const auto e = fixtures::thrown<IoError>([&] { read_idx(dir.path()); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr(dir.path()));
  EXPECT_THAT(e->what(), HasSubstr("directory"));
}

TEST_F(IdxReaderTest, WrongMagicAtOffset0) {
  Bytes bad = good;
  bad[0] = 'P', bad[1] = 'K';
  const std::string path = write("bad", bad);
  EXPECT_FORMAT_ERROR(read_idx(path), path, 0, "bad IDX magic 0x50 0x4B");
}

TEST_F(IdxReaderTest, EmptyFileIsFormatError) {
  const std::string path = write("empty", {});
  EXPECT_FORMAT_ERROR(read_idx(path), path, 0, "needs 4 bytes, the file has 0");
}

TEST_F(IdxReaderTest, UnsupportedTypeNamed) {
  const std::string path = write("floats", fixtures::idx_bytes({2}, Bytes(8), 0x0D));
  EXPECT_FORMAT_ERROR(read_idx(path), path, 2, "type 0x0D (float32) is not supported");
}

TEST_F(IdxReaderTest, RankOutOfRange) {
  const std::string rank0 = write("rank0", {0, 0, 8, 0});
  EXPECT_FORMAT_ERROR(read_idx(rank0), rank0, 3, "IDX rank 0 is out of range 1..4");
  const std::string rank5 = write("rank5", fixtures::idx_bytes({1, 1, 1, 1, 1}, {7}));
  EXPECT_FORMAT_ERROR(read_idx(rank5), rank5, 3, "IDX rank 5");
}

TEST_F(IdxReaderTest, TruncatedHeader) {
  const Bytes cut(good.begin(), good.begin() + 9);  // rank 3 needs 16 header bytes
  const std::string path = write("cut", cut);
  EXPECT_FORMAT_ERROR(read_idx(path), path, 9, "needs 16 bytes, the file has 9");
}

TEST_F(IdxReaderTest, DimProductOverflow) {
  const std::string path =
      write("huge", fixtures::idx_bytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}));
  EXPECT_FORMAT_ERROR(read_idx(path), path, 8, "dims overflow 64 bits at dim 1");
}

TEST_F(IdxReaderTest, TruncatedBodySaysExpectedAndPresent) {
  const Bytes cut(good.begin(), good.end() - 5);
  const std::string path = write("cut", cut);
  EXPECT_FORMAT_ERROR(read_idx(path), path, static_cast<int64_t>(cut.size()),
                      "needs 24 bytes, only 19 present");
}

TEST_F(IdxReaderTest, TruncatedBodyInsideGzipCountsDecompressedOffsets) {
  const Bytes cut(good.begin(), good.end() - 5);
  const std::string path = write("cut.gz", fixtures::gzip(cut));
  EXPECT_FORMAT_ERROR(read_idx(path), path, static_cast<int64_t>(cut.size()), "after gunzip");
}

TEST_F(IdxReaderTest, TrailingGarbage) {
  Bytes long_file = good;
  fixtures::append(long_file, {1, 2, 3});
  const std::string path = write("long", long_file);
  EXPECT_FORMAT_ERROR(read_idx(path), path, static_cast<int64_t>(good.size()),
                      "3 bytes of trailing garbage");
}

TEST_F(IdxReaderTest, TruncatedGzipAtCompressedEnd) {
  const Bytes gz = fixtures::gzip(fixtures::idx_bytes({64, 64}, fixtures::pattern_bytes(4096)));
  const Bytes cut(gz.begin(), gz.begin() + gz.size() / 2);
  const std::string path = write("cut.gz", cut);
  EXPECT_FORMAT_ERROR(read_idx(path), path, static_cast<int64_t>(cut.size()),
                      "truncated gzip stream");
}

TEST_F(IdxReaderTest, GzipCutInsideTrailerIsTruncated) {
  const Bytes gz = fixtures::gzip(good);
  const Bytes cut(gz.begin(), gz.end() - 3);  // deflate data complete, CRC/size trailer cut
  const std::string path = write("cut.gz", cut);
  EXPECT_FORMAT_ERROR(read_idx(path), path, static_cast<int64_t>(cut.size()),
                      "truncated gzip stream");
}

TEST_F(IdxReaderTest, CorruptGzipBytesPointIntoTheStream) {
  Bytes gz = fixtures::gzip(fixtures::idx_bytes({64, 64}, fixtures::pattern_bytes(4096)));
  for (size_t i = 12; i < gz.size() - 8; i += 3) gz[i] ^= 0x5A;  // wreck the deflate body
  const std::string path = write("corrupt.gz", gz);
  const auto e = fixtures::thrown<FormatError>([&] { read_idx(path); });
  ASSERT_TRUE(e);
  EXPECT_GT(e->offset(), 10);  // past the 10-byte gzip header
  EXPECT_LE(e->offset(), static_cast<int64_t>(gz.size()));
  EXPECT_THAT(e->what(), HasSubstr(path));
  EXPECT_THAT(e->what(), HasSubstr("offset " + std::to_string(e->offset())));
  EXPECT_THAT(e->what(), HasSubstr("gzip stream"));
}

TEST_F(IdxReaderTest, GzipCrcMismatchIsCorrupt) {
  Bytes gz = fixtures::gzip(good);
  gz[gz.size() - 8] ^= 0xFF;  // first byte of the trailer's CRC32
  const std::string path = write("badcrc.gz", gz);
  EXPECT_FORMAT_ERROR(read_idx(path), path, static_cast<int64_t>(gz.size()) - 4,
                      "corrupt gzip stream (incorrect data check)");
}

TEST_F(IdxReaderTest, GarbageAfterGzipStream) {
  Bytes gz = fixtures::gzip(good);
  const int64_t end = static_cast<int64_t>(gz.size());
  fixtures::append(gz, {0, 0, 0, 0});
  const std::string path = write("padded.gz", gz);
  EXPECT_FORMAT_ERROR(read_idx(path), path, end, "4 bytes of trailing data");
}

}  // namespace
}  // namespace tandem
