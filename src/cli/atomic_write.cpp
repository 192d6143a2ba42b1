#include "cli/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tandem/error.h"

namespace tandem::cli {
namespace {

// Removes the temporary file unless release() was called.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

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
  const std::string temp_path = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot create temporary file " + temp_path);
  TempFile guard(temp_path);
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      fail(path, "cannot write");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    fail(path, "cannot flush to disk");
  }
  if (::close(fd) != 0) fail(path, "cannot close");
  if (std::rename(temp_path.c_str(), path.c_str()) != 0) fail(path, "cannot rename into place");
  guard.release();
}

}  // namespace tandem::cli
