// Shared by the fuzz harnesses: the input written to a file for readers that take a path,
// and checksums fixed up so mutations reach the structure behind them.
#pragma once

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace tandem::fuzz {

// A file of this process's own, rewritten for every input: in /dev/shm when there is one
// (no disk I/O per run), else $TMPDIR or /tmp. Removed at exit.
class InputPath {
 public:
  explicit InputPath(const std::string& name) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmp ? tmp : "/tmp";
    path_ = dir + "/tandem_fuzz_" + std::to_string(getpid()) + "_" + name;
  }
  ~InputPath() { unlink(path_.c_str()); }
  InputPath(const InputPath&) = delete;
  InputPath& operator=(const InputPath&) = delete;

  // Writes `size` bytes at `data` as the whole file; returns its path.
  const std::string& write(const uint8_t* data, size_t size) const {
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) std::abort();  // the harness's own environment is broken: not a finding
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    close(fd);
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline uint32_t crc32_of(const uint8_t* data, size_t size) {
  return static_cast<uint32_t>(crc32_z(0, data, size));
}

// A tandem container's last 4 bytes are the CRC-32 of everything before them: set it, so
// the fuzzer explores what the checksum guards rather than the checksum.
inline std::string with_container_crc(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size < 20) return bytes;
  const uint32_t crc = crc32_of(data, size - 4);
  for (int i = 0; i < 4; ++i) bytes[size - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  return bytes;
}

}  // namespace tandem::fuzz
