#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/output_path.h"
#include "tandem/error.h"

namespace tandem {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

void write_file_atomically(const std::string& requested, std::string_view contents) {
  // Through a symlink to its target; never over a FIFO, device or directory.
  const std::string path = resolve_output_path(requested);
  remove_stale_temporaries(std::filesystem::path(path).parent_path().empty()
                               ? std::string(".")
                               : std::filesystem::path(path).parent_path().string());
  const std::string tmp = temporary_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(path, "cannot create temporary file " + tmp + ": " + errno_text());
  auto fail = [&](const std::string& what) {
    const std::string reason = what + ": " + errno_text();
    ::close(fd);
    ::unlink(tmp.c_str());
    throw IoError(path, reason);
  };
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync failed");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw IoError(path, "close failed: " + errno_text());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = "rename from " + tmp + " failed: " + errno_text();
    ::unlink(tmp.c_str());
    throw IoError(path, reason);
  }
  // Make the rename itself durable.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace tandem
