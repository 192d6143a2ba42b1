// Datasets in MNIST's format. Images stay uint8 until a batch is formed.
#pragma once

#include <string>
#include <utility>

#include "tandem/array.h"

namespace tandem {

// One split of a labelled image dataset: x (count, rows, cols) uint8, y (count,) uint8.
struct LabelledImages {
  ByteArray x;
  ByteArray y;
};

// (train, test), like Keras's `(x_train, y_train), (x_test, y_test) = load_data()`.
struct TrainTestSplit {
  LabelledImages train;
  LabelledImages test;
};

// Reads an IDX file (plain or gzip-compressed, detected by content, not by name).
// Throws IoError when the file cannot be read and FormatError (with path and byte offset)
// for a bad magic number, an unsupported element type, or a truncated or corrupt body.
ByteArray read_idx(const std::string& path);

// Reads one array stored in the member `name`.npy of a .npz archive (stored or deflated, as
// numpy.savez/savez_compressed write it). dtype uint8 ('|u1') or bool ('|b1'), C order only;
// zip64 archives (> 4 GiB) are rejected. IoError when unreadable; FormatError (path, offset)
// for a damaged archive, a CRC32 mismatch or a missing member (the message lists those present).
// Each call reads the whole archive.
ByteArray read_npz_array(const std::string& path, const std::string& name);

// Labels (count,) -> one-hot (count, num_classes) float. num_classes <= 0: max label + 1.
// A label >= num_classes is a ConfigError naming its index. Like Keras, (count, 1) is taken
// as (count,); other ranks are a ShapeError.
Tensor to_categorical(const ByteArray& labels, int num_classes = -1);

namespace mnist {
// Reads MNIST from `path`: a directory holding the four IDX files (train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each optionally
// .gz, not both: that is a ConfigError naming the two), or Keras's mnist.npz (x_train, y_train,
// x_test, y_test). A missing file is an IoError naming it. Images not (count, rows, cols), labels
// not (count,), image/label count mismatches and train/test image sizes that differ are
// FormatErrors.
TrainTestSplit load_data(const std::string& path);
}  // namespace mnist

namespace fashion_mnist {
// Default location of Debian's `dataset-fashion-mnist` package.
inline constexpr const char* kDefaultDir = "/usr/share/datasets/fashion-mnist";
// Same layout as MNIST's IDX files. A missing file's IoError says how to install the package.
TrainTestSplit load_data(const std::string& dir = kDefaultDir);
}  // namespace fashion_mnist

}  // namespace tandem
