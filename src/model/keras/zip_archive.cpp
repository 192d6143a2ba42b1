#include "model/keras/zip_archive.h"

#include <zip.h>

#include <memory>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

std::string zip_error_text(zip_error_t* error) {
  const std::string text = zip_error_strerror(error);
  zip_error_fini(error);
  return text;
}

// libzip's sources are reference counted: this owns one reference until released.
struct SourceRef {
  zip_source_t* source = nullptr;
  ~SourceRef() {
    if (source) zip_source_free(source);
  }
};

}  // namespace

ZipReader::ZipReader(std::string bytes, std::string path)
    : bytes_(std::move(bytes)), path_(std::move(path)) {
  zip_error_t error;
  zip_error_init(&error);
  SourceRef source{zip_source_buffer_create(bytes_.data(), bytes_.size(), 0, &error)};
  if (!source.source) throw FormatError(path_, "zip: " + zip_error_text(&error));
  archive_ = zip_open_from_source(source.source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!archive_) {
    throw FormatError(
        path_, "not a readable zip archive (a .keras file is one): " + zip_error_text(&error));
  }
  source.source = nullptr;  // the archive owns it now
  zip_error_fini(&error);
}

ZipReader::~ZipReader() {
  if (archive_) zip_discard(archive_);
}

bool ZipReader::contains(const std::string& entry) const {
  return zip_name_locate(archive_, entry.c_str(), 0) >= 0;
}

uint64_t ZipReader::declared_size(const std::string& entry) const {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(archive_, entry.c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) return 0;
  return st.size;
}

std::string ZipReader::read(const std::string& entry, uint64_t max_bytes) const {
  const std::string where = "zip entry '" + entry + "'";
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(archive_, entry.c_str(), 0, &st) != 0) {
    throw FormatError(path_, "has no " + where + " (not a Keras 3 .keras file?)");
  }
  if (!(st.valid & ZIP_STAT_SIZE)) throw FormatError(path_, where + " has no size");
  if (st.size > max_bytes) {
    throw FormatError(path_, where + " declares " + std::to_string(st.size) +
                                 " bytes, more than the " + std::to_string(max_bytes) +
                                 " this model can need");
  }
  if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
    throw FormatError(path_, where + " is encrypted");
  }
  std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(zip_fopen(archive_, entry.c_str(), 0),
                                                         zip_fclose);
  if (!file) {
    throw FormatError(path_, where + ": " + zip_strerror(archive_));
  }
  std::string out(st.size, '\0');
  uint64_t done = 0;
  while (done < st.size) {
    const zip_int64_t n = zip_fread(file.get(), out.data() + done, st.size - done);
    if (n < 0) throw FormatError(path_, where + ": " + zip_file_strerror(file.get()));
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  // One more read reaches the end of the entry, where libzip checks its CRC.
  char extra;
  const zip_int64_t tail = done == st.size ? zip_fread(file.get(), &extra, 1) : 0;
  if (tail < 0) throw FormatError(path_, where + ": " + zip_file_strerror(file.get()));
  if (done != st.size || tail != 0) {
    throw FormatError(path_, where + " holds " + (tail != 0 ? "more" : std::to_string(done)) +
                                 " bytes where its header declares " + std::to_string(st.size) +
                                 " (truncated or damaged)");
  }
  return out;
}

std::string zip_archive(const std::vector<std::pair<std::string, std::string>>& entries) {
  zip_error_t error;
  zip_error_init(&error);
  SourceRef buffer{zip_source_buffer_create(nullptr, 0, 0, &error)};
  if (!buffer.source) throw Error("zip: " + zip_error_text(&error));
  zip_t* archive = zip_open_from_source(buffer.source, ZIP_TRUNCATE, &error);
  if (!archive) throw Error("zip: " + zip_error_text(&error));
  zip_source_keep(buffer.source);  // read back below, after zip_close wrote it
  zip_error_fini(&error);
  for (const auto& [name, contents] : entries) {
    // The archive copies nothing: contents outlive zip_close below.
    zip_source_t* data = zip_source_buffer(archive, contents.data(), contents.size(), 0);
    if (!data || zip_file_add(archive, name.c_str(), data, ZIP_FL_ENC_UTF_8) < 0) {
      const std::string text = zip_strerror(archive);
      if (data) zip_source_free(data);
      zip_discard(archive);
      throw Error("zip: adding '" + name + "': " + text);
    }
    zip_set_file_compression(archive, zip_name_locate(archive, name.c_str(), 0), ZIP_CM_STORE, 0);
  }
  if (zip_close(archive) != 0) {
    const std::string text = zip_strerror(archive);
    zip_discard(archive);
    throw Error("zip: writing the archive: " + text);
  }
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_source_stat(buffer.source, &st) != 0 || zip_source_open(buffer.source) != 0) {
    throw Error("zip: reading the written archive back");
  }
  std::string out(st.size, '\0');
  const zip_int64_t n = zip_source_read(buffer.source, out.data(), st.size);
  zip_source_close(buffer.source);
  if (n < 0 || static_cast<uint64_t>(n) != st.size) {
    throw Error("zip: reading the written archive back");
  }
  return out;
}

}  // namespace tandem::detail
