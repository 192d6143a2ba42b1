#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "fixture_files.h"
#include "tandem/datasets.h"

namespace tandem {
namespace {

using fixtures::Bytes;
using fixtures::ZipMemberSpec;
using ::testing::HasSubstr;

class NpzReaderTest : public ::testing::Test {
 protected:
  fixtures::TempDir dir;
  const Shape images_shape = {4, 3, 5};                         // (count, rows, cols)
  const Bytes images = fixtures::pattern_bytes(4 * 3 * 5, 11);  // (60,)
  const Bytes labels = {3, 1, 4, 1};                            // (4,)

  std::string write(const std::string& name, const Bytes& bytes) {
    const std::string path = dir.file(name);
    fixtures::write_file(path, bytes);
    return path;
  }
  ZipMemberSpec images_member(bool deflate) const {
    return {"x_train.npy", fixtures::npy_bytes(images_shape, images), deflate};
  }
  static Bytes values(const ByteArray& a) { return Bytes(a.values().begin(), a.values().end()); }
};

TEST_F(NpzReaderTest, ReadsStoredMember) {
  const std::string path =
      write("a.npz", fixtures::zip_archive(
                         {{"y_train.npy", fixtures::npy_bytes({4}, labels)}, images_member(false)})
                         .bytes);
  const ByteArray x = read_npz_array(path, "x_train");
  EXPECT_EQ(x.shape(), images_shape);
  EXPECT_EQ(values(x), images);
  const ByteArray y = read_npz_array(path, "y_train");
  EXPECT_EQ(y.shape(), Shape({4}));
  EXPECT_EQ(values(y), labels);
}

TEST_F(NpzReaderTest, ReadsDeflatedMember) {
  const std::string path = write("a.npz", fixtures::zip_archive({images_member(true)}).bytes);
  const ByteArray x = read_npz_array(path, "x_train");
  EXPECT_EQ(x.shape(), images_shape);
  EXPECT_EQ(values(x), images);
}

TEST_F(NpzReaderTest, ReadsNumpyForceZip64LocalHeaders) {
  // numpy.savez writes local headers with 0xFFFFFFFF sizes even for tiny members.
  for (bool deflate : {false, true}) {
    ZipMemberSpec member = images_member(deflate);
    member.numpy_zip64_local = true;
    const std::string path = write("np.npz", fixtures::zip_archive({member}).bytes);
    EXPECT_EQ(values(read_npz_array(path, "x_train")), images) << "deflate=" << deflate;
  }
}

TEST_F(NpzReaderTest, ReadsVersion2HeaderBoolAndScalar) {
  const std::string path = write(
      "v.npz",
      fixtures::zip_archive({{"v2.npy", fixtures::npy_bytes({2, 2}, {1, 2, 3, 4}, "<u1", false, 2)},
                             {"mask.npy", fixtures::npy_bytes({3}, {1, 0, 1}, "|b1")},
                             {"scalar.npy", fixtures::npy_bytes({}, {42})}})
          .bytes);
  EXPECT_EQ(read_npz_array(path, "v2").shape(), Shape({2, 2}));
  EXPECT_EQ(values(read_npz_array(path, "mask")), Bytes({1, 0, 1}));
  const ByteArray scalar = read_npz_array(path, "scalar");
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar[0], 42);
}

TEST_F(NpzReaderTest, ReadsPython2LongDims) {
  // numpy under Python 2 wrote "(4L, 1L)"; old copies of Keras's mnist.npz may carry it.
  Bytes npy = fixtures::npy_bytes({4, 1}, labels);
  const std::string from = "(4, 1)", to = "(4L, 1L)";
  const auto at = std::search(npy.begin(), npy.end(), from.begin(), from.end());
  ASSERT_NE(at, npy.end());
  const auto pos = at - npy.begin();
  npy.erase(npy.begin() + pos, npy.begin() + pos + from.size());
  npy.insert(npy.begin() + pos, to.begin(), to.end());
  npy.erase(npy.begin() + 127 - 2, npy.begin() + 127);  // keep the padding: drop 2 spaces
  const std::string path = write("py2.npz", fixtures::zip_archive({{"y.npy", npy}}).bytes);
  const ByteArray y = read_npz_array(path, "y");
  EXPECT_EQ(y.shape(), Shape({4, 1}));
  EXPECT_EQ(values(y), labels);
}

TEST_F(NpzReaderTest, MissingFileIsIoError) {
  const std::string path = dir.file("absent.npz");
  const auto e = fixtures::thrown<IoError>([&] { read_npz_array(path, "x_train"); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr(path));
  EXPECT_THAT(e->what(), HasSubstr("No such file"));
}

TEST_F(NpzReaderTest, MissingMemberListsThosePresent) {
  const fixtures::ZipArchive zip = fixtures::zip_archive(
      {images_member(false), {"y_train.npy", fixtures::npy_bytes({4}, labels)}});
  const std::string path = write("a.npz", zip.bytes);
  const int64_t central_offset = static_cast<int64_t>(zip.bytes.size()) - 22 -
                                 2 * (46 + static_cast<int64_t>(std::string("x_train.npy").size()));
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x_test"), path, central_offset,
                      "no member x_test.npy in the archive; it holds: x_train.npy, y_train.npy");
}

TEST_F(NpzReaderTest, BadCrcPointsAtMemberData) {
  for (bool deflate : {false, true}) {
    ZipMemberSpec member = images_member(deflate);
    member.crc_xor = 0x1;
    const fixtures::ZipArchive zip = fixtures::zip_archive({member});
    const std::string path = write("crc.npz", zip.bytes);
    EXPECT_FORMAT_ERROR(read_npz_array(path, "x_train"), path, zip.data_offsets[0],
                        "CRC32 mismatch in member x_train.npy");
  }
}

TEST_F(NpzReaderTest, StoredContentFlipCaughtByCrc) {
  fixtures::ZipArchive zip = fixtures::zip_archive({images_member(false)});
  zip.bytes[zip.data_offsets[0] + 150] ^= 0x10;  // a body byte, past the 128-byte npy header
  const std::string path = write("flip.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x_train"), path, zip.data_offsets[0], "CRC32");
}

TEST_F(NpzReaderTest, CorruptDeflateData) {
  fixtures::ZipArchive zip = fixtures::zip_archive({images_member(true)});
  const int64_t start = zip.data_offsets[0];
  for (int64_t i = start; i < zip.eocd_offset - 46 - 11; ++i) zip.bytes[i] = 0xFF;
  const std::string path = write("bad.npz", zip.bytes);
  const auto e = fixtures::thrown<FormatError>([&] { read_npz_array(path, "x_train"); });
  ASSERT_TRUE(e);
  EXPECT_GE(e->offset(), start);
  EXPECT_THAT(e->what(), HasSubstr(path));
  EXPECT_THAT(e->what(), HasSubstr("offset " + std::to_string(e->offset())));
  EXPECT_THAT(e->what(), HasSubstr("deflate data"));
}

TEST_F(NpzReaderTest, NotAZipArchive) {
  const std::string path = write("plain.npz", fixtures::npy_bytes({4}, labels));
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x_train"), path, 132,  // its size
                      "no ZIP end-of-central-directory record");
}

TEST_F(NpzReaderTest, TruncatedArchive) {
  const Bytes zip = fixtures::zip_archive({images_member(false)}).bytes;
  const Bytes cut(zip.begin(), zip.begin() + 100);
  const std::string path = write("cut.npz", cut);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x_train"), path, 100, "end-of-central-directory");
}

TEST_F(NpzReaderTest, Zip64ArchiveRejectedClearly) {
  fixtures::ZipArchive zip = fixtures::zip_archive({images_member(false)});
  for (int i = 12; i < 20; ++i) zip.bytes[zip.eocd_offset + i] = 0xFF;  // zip64 placeholders
  const std::string path = write("z64.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x_train"), path, zip.eocd_offset,
                      "zip64 archive (over 4 GiB or 65535 members) is not supported");
}

TEST_F(NpzReaderTest, UnsupportedCompressionMethodNamed) {
  fixtures::ZipArchive zip = fixtures::zip_archive({images_member(false)});
  const int64_t entry = zip.eocd_offset - 46 - 11;
  zip.bytes[entry + 10] = 12;  // bzip2
  const std::string path = write("bz.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x_train"), path, entry + 10,
                      "compression method 12 (bzip2)");
}

TEST_F(NpzReaderTest, UnsupportedDtypeNamed) {
  const fixtures::ZipArchive zip =
      fixtures::zip_archive({{"x.npy", fixtures::npy_bytes({2}, Bytes(8), "<f4")}});
  const std::string path = write("f.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x"), path, zip.data_offsets[0] + 10,
                      "dtype '<f4' is not supported");
}

TEST_F(NpzReaderTest, FortranOrderRejected) {
  const fixtures::ZipArchive zip =
      fixtures::zip_archive({{"x.npy", fixtures::npy_bytes({2, 2}, Bytes(4), "|u1", true)}});
  const std::string path = write("f.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x"), path, zip.data_offsets[0] + 10,
                      "fortran_order True");
}

TEST_F(NpzReaderTest, BadNpyMagic) {
  Bytes npy = fixtures::npy_bytes({4}, labels);
  npy[1] = 'X';
  const fixtures::ZipArchive zip = fixtures::zip_archive({{"x.npy", npy}});
  const std::string path = write("m.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x"), path, zip.data_offsets[0], "no \\x93NUMPY magic");
}

TEST_F(NpzReaderTest, BodyShorterThanShape) {
  Bytes npy = fixtures::npy_bytes({5}, labels);  // says 5, holds 4
  const fixtures::ZipArchive zip = fixtures::zip_archive({{"x.npy", npy}});
  const std::string path = write("s.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x"), path, zip.data_offsets[0] + 132,
                      "shape (5,) needs 5 bytes, the member holds 4");
}

TEST_F(NpzReaderTest, ErrorsInsideDeflatedMemberNameTheInflatedByte) {
  Bytes npy = fixtures::npy_bytes({5}, labels);
  const fixtures::ZipArchive zip = fixtures::zip_archive({{"x.npy", npy, true}});
  const std::string path = write("s.npz", zip.bytes);
  EXPECT_FORMAT_ERROR(read_npz_array(path, "x"), path, zip.data_offsets[0],
                      "x.npy, byte 132 after inflating");
}

TEST_F(NpzReaderTest, MalformedHeaderDict) {
  Bytes npy = fixtures::npy_bytes({4}, labels);
  npy[10 + 1] = '"';  // unbalanced quote around 'descr'
  const fixtures::ZipArchive zip = fixtures::zip_archive({{"x.npy", npy}});
  const std::string path = write("h.npz", zip.bytes);
  const auto e = fixtures::thrown<FormatError>([&] { read_npz_array(path, "x"); });
  ASSERT_TRUE(e);
  EXPECT_GE(e->offset(), zip.data_offsets[0] + 10);
  EXPECT_THAT(e->what(), HasSubstr(".npy header"));
}

}  // namespace
}  // namespace tandem
