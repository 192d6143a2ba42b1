#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tandem/error.h"

namespace tandem {
namespace {

std::string errno_text(const std::string& action) {
  return action + ": " + std::strerror(errno);
}

// Why a file that is not a regular file is refused, by its type.
std::string not_regular(mode_t mode, const std::string& what) {
  const std::string expected = ", expected a regular file (" + what + ")";
  if (S_ISDIR(mode)) return "is a directory" + expected;
  if (S_ISFIFO(mode)) {
    return "is a FIFO (named pipe)" + expected +
           "; reading one could block forever: give the path of the file itself";
  }
  if (S_ISCHR(mode)) return "is a character device" + expected;
  if (S_ISBLK(mode)) return "is a block device" + expected;
  if (S_ISSOCK(mode)) return "is a socket" + expected;
  return "is not a regular file" + expected;
}

}  // namespace

std::string describe_bytes(uint64_t bytes) {
  char text[64];
  if (bytes >= kGiB) {
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / kGiB);
  } else if (bytes >= kMiB) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  } else {
    return std::to_string(bytes) + " bytes";
  }
  return std::string(text) + " (" + std::to_string(bytes) + " bytes)";
}

void throw_out_of_memory(const std::string& path, const std::string& what, uint64_t bytes) {
  throw IoError(path, "out of memory allocating " + describe_bytes(bytes) + " for " + what);
}

InputFile::InputFile(const std::string& path, uint64_t max_bytes, const std::string& what)
    : path_(path) {
  // stat first: open() on a FIFO with no writer blocks until one appears.
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0) throw IoError(path, errno_text("cannot open"));
  if (!S_ISREG(before.st_mode)) throw IoError(path, not_regular(before.st_mode, what));
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw IoError(path, errno_text("cannot open"));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const std::string text = errno_text("cannot stat");
    ::close(fd_);
    throw IoError(path, text);
  }
  if (!S_ISREG(st.st_mode) || st.st_ino != before.st_ino || st.st_dev != before.st_dev) {
    ::close(fd_);
    throw IoError(path, S_ISREG(st.st_mode) ? "was replaced while being opened; try again"
                                            : not_regular(st.st_mode, what));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > max_bytes) {
    ::close(fd_);
    throw IoError(path, "is " + describe_bytes(size_) + ", more than the " +
                            describe_bytes(max_bytes) + " a " + what + " may be");
  }
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t InputFile::read_some(uint64_t offset, void* dst, size_t n) const {
  size_t filled = 0;
  auto* out = static_cast<char*>(dst);
  while (filled < n) {
    const ssize_t got = ::pread(fd_, out + filled, n - filled, static_cast<off_t>(offset + filled));
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw IoError(path_, errno_text("read failed at byte " + std::to_string(offset + filled)));
    }
    if (got == 0) break;
    filled += static_cast<size_t>(got);
  }
  return filled;
}

void InputFile::read_exact(uint64_t offset, void* dst, size_t n) const {
  const size_t got = read_some(offset, dst, n);
  if (got != n) {
    throw IoError(path_, "ends at byte " + std::to_string(offset + got) + " while " +
                             std::to_string(offset + n) +
                             " were expected: it shrank while being read");
  }
}

std::vector<uint8_t> InputFile::read_all() const {
  std::vector<uint8_t> bytes = allocating(path_, "its content", size_, [&] {
    return std::vector<uint8_t>(static_cast<size_t>(size_));
  });
  read_exact(0, bytes.data(), bytes.size());
  return bytes;
}

std::string InputFile::read_all_text() const {
  std::string text = allocating(path_, "its content", size_,
                                [&] { return std::string(static_cast<size_t>(size_), '\0'); });
  read_exact(0, text.data(), text.size());
  return text;
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes,
                              const std::string& what) {
  return InputFile(path, max_bytes, what).read_all_text();
}

}  // namespace tandem
