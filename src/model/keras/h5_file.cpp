#include "model/keras/h5_file.h"

#include <hdf5.h>

#include <algorithm>
#include <limits>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

// libhdf5 prints its error stack to stderr by default; we turn it into our errors instead.
void silence_hdf5() {
  static const bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

// The innermost message on libhdf5's error stack ("bad symbol table node signature").
std::string hdf5_message() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
        if (n == 0 && e->desc) *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? std::string("libhdf5 failed") : text;
}

// Closes an HDF5 identifier at scope exit.
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  Id(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  ~Id() {
    if (id >= 0) close(id);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id; }  // NOLINT: passes straight to the C API
};

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

H5Reader::H5Reader(const std::string& bytes, std::string path, std::string where)
    : lock_(hdf5_mutex()), path_(std::move(path)), where_(std::move(where)) {
  silence_hdf5();
  fapl_ = H5Pcreate(H5P_FILE_ACCESS);
  // The image is copied into the driver's own buffer (read-only use needs no more).
  if (fapl_ < 0 || H5Pset_fapl_core(fapl_, 1 << 20, 0) < 0 ||
      H5Pset_file_image(fapl_, const_cast<char*>(bytes.data()), bytes.size()) < 0) {
    fail("", "opening the image: " + hdf5_message());
  }
  file_ = H5Fopen("tandem-in-memory.h5", H5F_ACC_RDONLY, fapl_);
  if (file_ < 0) fail("", "not a readable HDF5 file: " + hdf5_message());
}

H5Reader::~H5Reader() {
  if (file_ >= 0) H5Fclose(file_);
  if (fapl_ >= 0) H5Pclose(fapl_);
}

void H5Reader::fail(const std::string& object, const std::string& what) const {
  throw FormatError(
      path_, where_ + (object.empty() ? "" : ", HDF5 object '" + object + "'") + ": " + what);
}

bool H5Reader::exists(const std::string& object) const {
  // H5Lexists needs every group on the way to exist: check them one at a time.
  size_t at = 0;
  while (true) {
    const size_t slash = object.find('/', at);
    const std::string prefix = object.substr(0, slash);
    const htri_t link = H5Lexists(file_, prefix.c_str(), H5P_DEFAULT);
    if (link < 0) fail(prefix, hdf5_message());
    if (link == 0) return false;
    const htri_t there = H5Oexists_by_name(file_, prefix.c_str(), H5P_DEFAULT);
    if (there <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    if (slash == std::string::npos) return true;
    at = slash + 1;
  }
}

int64_t H5Reader::children(const std::string& group) const {
  if (!exists(group)) return 0;
  Id g(H5Gopen2(file_, group.c_str(), H5P_DEFAULT), H5Gclose);
  if (g < 0) fail(group, "not a group: " + hdf5_message());
  H5G_info_t info;
  if (H5Gget_info(g, &info) < 0) fail(group, hdf5_message());
  return static_cast<int64_t>(info.nlinks);
}

std::vector<float> H5Reader::read_floats(const std::string& name, const Shape& shape) const {
  if (!exists(name)) fail(name, "missing (a weight of this model)");
  Id d(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (d < 0) fail(name, "not a dataset: " + hdf5_message());
  Id type(H5Dget_type(d), H5Tclose);
  if (type < 0 || H5Tget_class(type) != H5T_FLOAT) fail(name, "is not a float array");
  Id space(H5Dget_space(d), H5Sclose);
  const int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
  if (rank < 0 || rank > 32) fail(name, "has no valid shape: " + hdf5_message());
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  const bool same = dims.size() == shape.size() &&
                    std::equal(dims.begin(), dims.end(), shape.begin(),
                               [](hsize_t a, int64_t b) { return a == static_cast<hsize_t>(b); });
  if (!same) {
    fail(name, "has shape " + shape_text(dims) + " where the layer needs " +
                   shape_text(std::vector<hsize_t>(shape.begin(), shape.end())));
  }
  std::vector<float> out(static_cast<size_t>(shape_size(shape)));
  if (!out.empty() && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
    fail(name, "unreadable: " + hdf5_message());
  }
  return out;
}

int64_t H5Reader::open_scalar(const std::string& name, bool integer) const {
  if (!exists(name)) fail(name, "missing");
  const hid_t d = H5Dopen2(file_, name.c_str(), H5P_DEFAULT);
  if (d < 0) fail(name, "not a dataset: " + hdf5_message());
  Id type(H5Dget_type(d), H5Tclose);
  Id space(H5Dget_space(d), H5Sclose);
  const H5T_class_t cls = type < 0 ? H5T_NO_CLASS : H5Tget_class(type);
  const bool ok = (cls == H5T_INTEGER || (!integer && cls == H5T_FLOAT)) && space >= 0 &&
                  H5Sget_simple_extent_npoints(space) == 1;
  if (!ok) {
    H5Dclose(d);
    fail(name, integer ? "is not one integer" : "is not one number");
  }
  return d;
}

int64_t H5Reader::read_integer(const std::string& name) const {
  Id d(open_scalar(name, true), H5Dclose);
  long long value = 0;
  if (H5Dread(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) < 0) {
    fail(name, "unreadable: " + hdf5_message());
  }
  return value;
}

double H5Reader::read_float(const std::string& name) const {
  Id d(open_scalar(name, false), H5Dclose);
  double value = 0;
  if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) < 0) {
    fail(name, "unreadable: " + hdf5_message());
  }
  return value;
}

namespace {

// The strings of attribute `attr` (scalar or 1-D), variable or fixed length; an empty
// non-string array gives none. False when it holds something else.
bool attribute_strings(hid_t attr, std::vector<std::string>& out) {
  Id type(H5Aget_type(attr), H5Tclose);
  Id space(H5Aget_space(attr), H5Sclose);
  if (type < 0 || space < 0) return false;
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0 || n > (1 << 24)) return false;
  if (H5Tget_class(type) != H5T_STRING) return n == 0;
  if (n == 0) return true;
  if (H5Tis_variable_str(type) > 0) {
    std::vector<char*> texts(static_cast<size_t>(n), nullptr);
    Id memtype(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memtype, H5T_VARIABLE);
    H5Tset_cset(memtype, H5Tget_cset(type));
    if (H5Aread(attr, memtype, texts.data()) < 0) return false;
    for (char* t : texts) out.emplace_back(t ? t : "");
    H5Dvlen_reclaim(memtype, space, H5P_DEFAULT, texts.data());
    return true;
  }
  const size_t width = H5Tget_size(type);
  if (width == 0 || width > (1 << 20)) return false;
  std::string buffer(width * static_cast<size_t>(n), '\0');
  if (H5Aread(attr, type, buffer.data()) < 0) return false;
  for (hssize_t i = 0; i < n; ++i) {
    std::string t = buffer.substr(static_cast<size_t>(i) * width, width);
    t.resize(std::min(t.size(), t.find('\0')));
    out.push_back(std::move(t));
  }
  return true;
}

}  // namespace

std::optional<std::string> H5Reader::string_attribute(const std::string& object,
                                                      const std::string& name) const {
  if (object != "/" && !exists(object)) return std::nullopt;
  if (H5Aexists_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  Id attr(H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  std::vector<std::string> texts;
  if (attr < 0 || !attribute_strings(attr, texts) || texts.size() != 1) {
    fail(object, "attribute '" + name + "' is not a string");
  }
  return texts[0];
}

bool H5Reader::has_attribute(const std::string& object, const std::string& name) const {
  if (object != "/" && !exists(object)) return false;
  for (const std::string& n : {name, name + "0"}) {
    if (H5Aexists_by_name(file_, object.c_str(), n.c_str(), H5P_DEFAULT) > 0) return true;
    H5Eclear2(H5E_DEFAULT);
  }
  return false;
}

std::vector<std::string> H5Reader::strings_attribute(const std::string& object,
                                                     const std::string& name) const {
  if (object != "/" && !exists(object)) fail(object, "missing");
  std::vector<std::string> out;
  for (int part = -1;; ++part) {
    const std::string attr_name = part < 0 ? name : name + std::to_string(part);
    if (H5Aexists_by_name(file_, object.c_str(), attr_name.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      if (part < 0) continue;  // split: name0, name1, ...
      if (part == 0) fail(object, "has no attribute '" + name + "'");
      return out;
    }
    Id attr(H5Aopen_by_name(file_, object.c_str(), attr_name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose);
    if (attr < 0 || !attribute_strings(attr, out)) {
      fail(object, "attribute '" + attr_name + "' is not a list of strings");
    }
    if (part < 0) return out;
  }
}

H5Writer::H5Writer() : lock_(hdf5_mutex()) {
  silence_hdf5();
  fapl_ = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl_ < 0 || H5Pset_fapl_core(fapl_, 1 << 20, 0) < 0) {
    throw Error("HDF5: creating a file in memory: " + hdf5_message());
  }
  file_ = H5Fcreate("tandem-in-memory.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl_);
  if (file_ < 0) throw Error("HDF5: creating a file in memory: " + hdf5_message());
}

H5Writer::~H5Writer() {
  if (file_ >= 0) H5Fclose(file_);
  if (fapl_ >= 0) H5Pclose(fapl_);
}

void H5Writer::group(const std::string& group, const std::string& name_attribute) {
  size_t at = 0;
  while (true) {
    const size_t slash = group.find('/', at);
    const std::string prefix = group.substr(0, slash);
    if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) {
      Id g(H5Gcreate2(file_, prefix.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      if (g < 0) throw Error("HDF5: creating group '" + prefix + "': " + hdf5_message());
    }
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  if (name_attribute.empty()) return;
  // A variable-length UTF-8 string, as h5py writes a str attribute.
  Id g(H5Gopen2(file_, group.c_str(), H5P_DEFAULT), H5Gclose);
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id attr(H5Acreate2(g, "name", type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* text = name_attribute.c_str();
  if (attr < 0 || H5Awrite(attr, type, &text) < 0) {
    throw Error("HDF5: naming group '" + group + "': " + hdf5_message());
  }
}

void H5Writer::floats(const std::string& name, const Shape& shape, const float* data) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Id space(dims.empty() ? H5Screate(H5S_SCALAR)
                        : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
           H5Sclose);
  Id d(
      H5Dcreate2(file_, name.c_str(), H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (d < 0 || (shape_size(shape) > 0 &&
                H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)) {
    throw Error("HDF5: writing '" + name + "': " + hdf5_message());
  }
}

void H5Writer::integer(const std::string& name, int64_t value) {
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id d(H5Dcreate2(file_, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
       H5Dclose);
  const long long v = value;
  if (d < 0 || H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0) {
    throw Error("HDF5: writing '" + name + "': " + hdf5_message());
  }
}

void H5Writer::scalar(const std::string& name, float value) {
  floats(name, {}, &value);
}

std::string H5Writer::image() {
  if (H5Fflush(file_, H5F_SCOPE_GLOBAL) < 0) throw Error("HDF5: flushing: " + hdf5_message());
  const ssize_t size = H5Fget_file_image(file_, nullptr, 0);
  if (size < 0) throw Error("HDF5: sizing the file image: " + hdf5_message());
  std::string out(static_cast<size_t>(size), '\0');
  if (H5Fget_file_image(file_, out.data(), out.size()) != size) {
    throw Error("HDF5: copying the file image: " + hdf5_message());
  }
  return out;
}

}  // namespace tandem::detail
