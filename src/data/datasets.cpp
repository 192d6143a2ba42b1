// mnist::load_data and fashion_mnist::load_data: find the files, read them, check that images
// and labels agree before anyone trains on a misaligned pair.
#include "tandem/datasets.h"

#include <filesystem>
#include <string>

namespace tandem {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFashionHint =
    ". Fashion-MNIST is packaged for Debian: `apt-get install dataset-fashion-mnist` puts it in "
    "/usr/share/datasets/fashion-mnist";
constexpr const char* kMnistHint =
    ". Pass a directory of the four MNIST IDX files (optionally .gz) or Keras's mnist.npz "
    "(https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz)";

// Where an array came from, so a check can point at it: the file, a readable name, and the
// byte offsets of its rank and first dim (IDX: 3 and 4; inside an .npz there is no single
// file offset for a member's header, so 0).
struct Origin {
  std::string path;
  std::string name;
  int64_t rank_offset = 0;
  int64_t count_offset = 0;
};

// `dir/name` or `dir/name.gz`; both present is an error naming both.
std::string find_idx_file(const fs::path& dir, const std::string& name, const std::string& hint) {
  const fs::path plain = dir / name, gzipped = dir / (name + ".gz");
  std::error_code ignored;  // an unreadable entry counts as missing here; read_idx says why
  const bool has_plain = fs::exists(plain, ignored), has_gzipped = fs::exists(gzipped, ignored);
  if (has_plain && has_gzipped) {
    // Which of the two is the data is not ours to guess: they may differ.
    throw ConfigError("both " + plain.string() + " and " + gzipped.string() +
                      " exist; remove or move the one that should not be read");
  }
  if (has_plain) return plain.string();
  if (has_gzipped) return gzipped.string();
  throw IoError(plain.string(), "no such file (nor " + gzipped.string() + ")" + hint);
}

// x (count, rows, cols), y (count,) with equal counts.
LabelledImages checked(ByteArray x, ByteArray y, const Origin& x_origin, const Origin& y_origin) {
  if (x.rank() != 3) {
    throw FormatError(
        x_origin.path, x_origin.rank_offset,
        x_origin.name + ": images must be (count, rows, cols), got " + shape_to_string(x.shape()));
  }
  if (y.rank() != 1) {
    throw FormatError(
        y_origin.path, y_origin.rank_offset,
        y_origin.name + ": labels must be (count,), got " + shape_to_string(y.shape()));
  }
  if (x.dim(0) != y.dim(0)) {
    throw FormatError(y_origin.path, y_origin.count_offset,
                      x_origin.name + " holds " + std::to_string(x.dim(0)) + " images but " +
                          y_origin.name + " holds " + std::to_string(y.dim(0)) + " labels");
  }
  return {std::move(x), std::move(y)};
}

// Train and test images must be the same size, or a model fitted on one cannot run the other.
void check_same_image_size(const TrainTestSplit& split, const Origin& train_x,
                           const Origin& test_x) {
  const Shape& a = split.train.x.shape();
  const Shape& b = split.test.x.shape();
  if (a[1] != b[1] || a[2] != b[2]) {
    throw FormatError(test_x.path, test_x.count_offset,
                      test_x.name + " has " + shape_to_string({b[1], b[2]}) + " images but " +
                          train_x.name + " has " + shape_to_string({a[1], a[2]}));
  }
}

TrainTestSplit load_idx_dir(const std::string& dir, const std::string& hint) {
  std::error_code ignored;
  if (!fs::is_directory(dir, ignored)) throw IoError(dir, "no such directory" + hint);
  auto origin = [&](const std::string& name) {
    const std::string path = find_idx_file(dir, name, hint);
    return Origin{path, path, 3, 4};
  };
  const Origin train_x = origin("train-images-idx3-ubyte");
  const Origin train_y = origin("train-labels-idx1-ubyte");
  const Origin test_x = origin("t10k-images-idx3-ubyte");
  const Origin test_y = origin("t10k-labels-idx1-ubyte");
  TrainTestSplit split{checked(read_idx(train_x.path), read_idx(train_y.path), train_x, train_y),
                       checked(read_idx(test_x.path), read_idx(test_y.path), test_x, test_y)};
  check_same_image_size(split, train_x, test_x);
  return split;
}

TrainTestSplit load_npz(const std::string& path) {
  auto origin = [&](const std::string& name) { return Origin{path, path + ":" + name, 0, 0}; };
  const Origin train_x = origin("x_train"), train_y = origin("y_train");
  const Origin test_x = origin("x_test"), test_y = origin("y_test");
  TrainTestSplit split{
      checked(read_npz_array(path, "x_train"), read_npz_array(path, "y_train"), train_x, train_y),
      checked(read_npz_array(path, "x_test"), read_npz_array(path, "y_test"), test_x, test_y)};
  check_same_image_size(split, train_x, test_x);
  return split;
}

}  // namespace

namespace mnist {
TrainTestSplit load_data(const std::string& path) {
  std::error_code ignored;
  const fs::file_status status = fs::status(path, ignored);
  if (!fs::exists(status))
    throw IoError(path, "no such file or directory" + std::string(kMnistHint));
  if (fs::is_directory(status)) return load_idx_dir(path, kMnistHint);
  return load_npz(path);
}
}  // namespace mnist

namespace fashion_mnist {
TrainTestSplit load_data(const std::string& dir) {
  return load_idx_dir(dir, kFashionHint);
}
}  // namespace fashion_mnist

}  // namespace tandem
