#include "cli/atomic_write.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/atomic_file.h"
#include "tandem/error.h"

namespace tandem::cli {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IoError(path, what + ": " + std::strerror(errno));
}

}  // namespace

void check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) throw IoError(path, "is a directory, not a file name");
  const fs::path parent =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(parent, error)) {
    throw IoError(path, "directory " + parent.string() + " does not exist");
  }
  if (::access(parent.c_str(), W_OK) != 0) fail(path, "directory " + parent.string());
}

void write_text_atomically(const std::string& path, std::string_view contents) {
  write_file_atomically(path, contents);
}

}  // namespace tandem::cli
