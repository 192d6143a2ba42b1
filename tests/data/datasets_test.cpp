#include "tandem/datasets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "fixture_files.h"
#include "skip.h"

namespace tandem {
namespace {

using fixtures::Bytes;
using ::testing::HasSubstr;

constexpr int64_t kRows = 4, kCols = 3;

// One file of a fake MNIST directory.
struct IdxFile {
  std::string name;
  Shape shape;
  bool gzipped = false;
};

class DatasetsTest : public ::testing::Test {
 protected:
  fixtures::TempDir dir;

  // Writes the four files; labels are i % 10.
  void write_idx_dir(int64_t train = 6, int64_t test = 2, bool gz_train = false,
                     bool gz_test = false) {
    write_idx({"train-images-idx3-ubyte", {train, kRows, kCols}, gz_train});
    write_idx({"train-labels-idx1-ubyte", {train}, gz_train});
    write_idx({"t10k-images-idx3-ubyte", {test, kRows, kCols}, gz_test});
    write_idx({"t10k-labels-idx1-ubyte", {test}, gz_test});
  }
  std::string write_idx(const IdxFile& f) {
    Bytes body = fixtures::pattern_bytes(static_cast<size_t>(shape_size(f.shape)));
    if (f.shape.size() == 1) {
      for (size_t i = 0; i < body.size(); ++i) body[i] = i % 10;
    }
    const Bytes bytes = fixtures::idx_bytes(f.shape, body);
    const std::string path = dir.file(f.name + (f.gzipped ? ".gz" : ""));
    fixtures::write_file(path, f.gzipped ? fixtures::gzip(bytes) : bytes);
    return path;
  }

  static void expect_split(const TrainTestSplit& s, int64_t train, int64_t test) {
    EXPECT_EQ(s.train.x.shape(), Shape({train, kRows, kCols}));
    EXPECT_EQ(s.train.y.shape(), Shape({train}));
    EXPECT_EQ(s.test.x.shape(), Shape({test, kRows, kCols}));
    EXPECT_EQ(s.test.y.shape(), Shape({test}));
    EXPECT_EQ(s.train.y[5], 5);
    EXPECT_EQ(s.train.x[1], 7);  // pattern_bytes: i * 7
  }
};

TEST_F(DatasetsTest, LoadsPlainIdxDirectory) {
  write_idx_dir();
  expect_split(mnist::load_data(dir.path()), 6, 2);
}

TEST_F(DatasetsTest, LoadsGzAndMixedIdxDirectory) {
  write_idx_dir(6, 2, /*gz_train=*/true, /*gz_test=*/false);
  expect_split(mnist::load_data(dir.path()), 6, 2);
  expect_split(fashion_mnist::load_data(dir.path()), 6, 2);
}

TEST_F(DatasetsTest, LoadsKerasNpz) {
  // Keras's layout, with stored and deflated members and numpy's zip64 local headers.
  auto npy = [](const Shape& shape, bool labels) {
    Bytes body = fixtures::pattern_bytes(static_cast<size_t>(shape_size(shape)));
    if (labels) {
      for (size_t i = 0; i < body.size(); ++i) body[i] = i % 10;
    }
    return fixtures::npy_bytes(shape, body);
  };
  const std::string path = dir.file("mnist.npz");
  fixtures::write_file(
      path, fixtures::zip_archive({{"x_test.npy", npy({2, kRows, kCols}, false), true},
                                   {"x_train.npy", npy({6, kRows, kCols}, false), true, true},
                                   {"y_train.npy", npy({6}, true), false, true},
                                   {"y_test.npy", npy({2}, true)}})
                .bytes);
  expect_split(mnist::load_data(path), 6, 2);
}

TEST_F(DatasetsTest, MissingPathNamesItAndWhatToPass) {
  const std::string path = dir.file("nowhere");
  const auto e = fixtures::thrown<IoError>([&] { mnist::load_data(path); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path(), path);
  EXPECT_THAT(e->what(), HasSubstr("mnist.npz"));
}

TEST_F(DatasetsTest, MissingFileNamesBothNamesTried) {
  write_idx_dir();
  std::filesystem::remove(dir.file("t10k-labels-idx1-ubyte"));
  const std::string plain = dir.file("t10k-labels-idx1-ubyte");
  const auto e = fixtures::thrown<IoError>([&] { mnist::load_data(dir.path()); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path(), plain);
  EXPECT_THAT(e->what(), HasSubstr(plain + ": no such file (nor " + plain + ".gz)"));
}

TEST_F(DatasetsTest, PlainAndGzOfOneFileAreAnErrorNamingBoth) {
  write_idx_dir(6, 2, /*gz_train=*/true, /*gz_test=*/false);
  std::filesystem::copy_file(dir.file("train-labels-idx1-ubyte.gz"),
                             dir.file("train-labels-idx1-ubyte"));
  const auto e = fixtures::thrown<ConfigError>([&] { mnist::load_data(dir.path()); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr(dir.file("train-labels-idx1-ubyte") + " and " +
                                   dir.file("train-labels-idx1-ubyte.gz")));
}

TEST_F(DatasetsTest, FashionMnistMissingSaysHowToInstall) {
  const std::string missing = dir.file("fashion");
  const auto e = fixtures::thrown<IoError>([&] { fashion_mnist::load_data(missing); });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr(missing));
  EXPECT_THAT(e->what(), HasSubstr("apt-get install dataset-fashion-mnist"));
}

TEST_F(DatasetsTest, IdxCountMismatchNamesBothFilesAndCounts) {
  write_idx_dir();
  const std::string labels = write_idx({"train-labels-idx1-ubyte", {5}});
  const std::string images = dir.file("train-images-idx3-ubyte");
  EXPECT_FORMAT_ERROR(mnist::load_data(dir.path()), labels, 4,
                      images + " holds 6 images but " + labels + " holds 5 labels");
}

TEST_F(DatasetsTest, NpzCountMismatchNamesBothMembers) {
  const std::string path = dir.file("mnist.npz");
  fixtures::write_file(
      path,
      fixtures::zip_archive({{"x_train.npy", fixtures::npy_bytes({3, kRows, kCols}, Bytes(36))},
                             {"y_train.npy", fixtures::npy_bytes({2}, Bytes(2))}})
          .bytes);
  EXPECT_FORMAT_ERROR(mnist::load_data(path), path, 0,
                      path + ":x_train holds 3 images but " + path + ":y_train holds 2 labels");
}

TEST_F(DatasetsTest, ImagesMustBeRank3) {
  write_idx_dir();
  const std::string images = write_idx({"t10k-images-idx3-ubyte", {2, kRows * kCols}});
  EXPECT_FORMAT_ERROR(mnist::load_data(dir.path()), images, 3,
                      "images must be (count, rows, cols), got (2, 12)");
}

TEST_F(DatasetsTest, TrainAndTestImageSizesMustAgree) {
  write_idx_dir();
  const std::string images = write_idx({"t10k-images-idx3-ubyte", {2, kCols, kRows}});
  EXPECT_FORMAT_ERROR(mnist::load_data(dir.path()), images, 4, "has (3, 4) images but");
}

TEST_F(DatasetsTest, CorruptMemberFileKeepsItsOwnPath) {
  write_idx_dir(6, 2, true, true);
  const std::string labels = dir.file("t10k-labels-idx1-ubyte.gz");
  const Bytes gz = fixtures::gzip(fixtures::idx_bytes({2}, {0, 1}));
  fixtures::write_file(labels, Bytes(gz.begin(), gz.end() - 6));
  EXPECT_FORMAT_ERROR(mnist::load_data(dir.path()), labels, static_cast<int64_t>(gz.size()) - 6,
                      "truncated gzip stream");
}

// The real data set, from Debian's dataset-fashion-mnist package, when installed.
TEST(FashionMnistReal, LoadsInstalledDataset) {
  if (!std::filesystem::is_directory(fashion_mnist::kDefaultDir)) {
    TANDEM_SKIP(fashion_mnist::kDefaultDir
                << " not present; `apt-get install dataset-fashion-mnist` to run this test");
  }
  const TrainTestSplit s = fashion_mnist::load_data();
  EXPECT_EQ(s.train.x.shape(), Shape({60000, 28, 28}));
  EXPECT_EQ(s.train.y.shape(), Shape({60000}));
  EXPECT_EQ(s.test.x.shape(), Shape({10000, 28, 28}));
  EXPECT_EQ(s.test.y.shape(), Shape({10000}));
  for (const ByteArray* labels : {&s.train.y, &s.test.y}) {
    const auto [lo, hi] = std::minmax_element(labels->values().begin(), labels->values().end());
    EXPECT_EQ(*lo, 0);
    EXPECT_EQ(*hi, 9);
  }
  // Fashion-MNIST is balanced: 6000 training images per class.
  EXPECT_EQ(std::count(s.train.y.values().begin(), s.train.y.values().end(), 3), 6000);
}

}  // namespace
}  // namespace tandem
