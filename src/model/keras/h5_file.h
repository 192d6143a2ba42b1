// HDF5 files held in memory, through libhdf5's core driver: the weights of a .keras file
// (its model.weights.h5 entry) and .weights.h5 files. Only what Keras 3 writes is read:
// groups, float datasets of a known shape, integer and float scalars. libhdf5 is not
// thread-safe as Debian builds it, so each reader or writer holds one process-wide lock
// for its lifetime. Every error names the file and the HDF5 object.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tandem/array.h"

namespace tandem::detail {

class H5Reader {
 public:
  // Opens the HDF5 file image `bytes`; `where` names it in errors ("x.keras, zip entry
  // 'model.weights.h5'" or the file's path). FormatError when it is not an HDF5 file.
  H5Reader(const std::string& bytes, std::string path, std::string where);
  ~H5Reader();
  H5Reader(const H5Reader&) = delete;
  H5Reader& operator=(const H5Reader&) = delete;

  // Whether `object` ("layers/dense/vars/0") exists, every group on its way included.
  bool exists(const std::string& object) const;
  // The number of links in `group` (0 when it does not exist).
  int64_t children(const std::string& group) const;
  // The float dataset `name`, which must have `shape` exactly (checked before anything is
  // allocated); converted to float32 from any float type.
  std::vector<float> read_floats(const std::string& name, const Shape& shape) const;
  // A scalar (or one-element) dataset.
  int64_t read_integer(const std::string& name) const;
  double read_float(const std::string& name) const;
  // A string attribute of `object` ("/" for the file), variable or fixed length; none when
  // it is absent.
  std::optional<std::string> string_attribute(const std::string& object,
                                              const std::string& name) const;
  // A list-of-strings attribute (Keras 2's layer_names, weight_names); an empty numeric
  // array (what h5py writes for an empty list) is an empty list. Keras splits one longer
  // than 64 KiB into name0, name1, ...: those are joined. Missing: FormatError.
  std::vector<std::string> strings_attribute(const std::string& object,
                                             const std::string& name) const;
  // Whether `object` ("/" for the file) has attribute `name` (or its split name0).
  bool has_attribute(const std::string& object, const std::string& name) const;

 private:
  [[noreturn]] void fail(const std::string& object, const std::string& what) const;
  int64_t open_scalar(const std::string& name, bool integer) const;

  std::unique_lock<std::mutex> lock_;
  std::string path_, where_;
  int64_t fapl_ = -1, file_ = -1;
};

class H5Writer {
 public:
  H5Writer();  // an empty file in memory
  ~H5Writer();
  H5Writer(const H5Writer&) = delete;
  H5Writer& operator=(const H5Writer&) = delete;

  // Creates `group` and the groups above it where missing; a non-empty `name_attribute`
  // becomes its "name" attribute (Keras writes one on each vars group).
  void group(const std::string& group, const std::string& name_attribute = "");
  void floats(const std::string& name, const Shape& shape, const float* data);
  void integer(const std::string& name, int64_t value);  // an int64 scalar
  void scalar(const std::string& name, float value);     // a float32 scalar
  // The file's bytes; the writer is done after this.
  std::string image();

 private:
  std::unique_lock<std::mutex> lock_;
  int64_t fapl_ = -1, file_ = -1;
};

}  // namespace tandem::detail
