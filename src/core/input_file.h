// Reading a file that a user named: only a regular file is opened (a FIFO would block the
// reader forever, a device would never end), its size comes from the open descriptor, and
// no reader allocates for bytes the file does not hold. Every error names the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem {

// Caps on what a reader accepts (the file's own size is checked first; these bound what an
// honest but absurd file may make us allocate).
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

class InputFile {
 public:
  // Opens `path` read-only. IoError naming it when it is missing or unreadable, when it is
  // not a regular file (checked with stat before the open, which uses O_NONBLOCK in case it
  // was swapped for a FIFO in between), or when it is larger than `max_bytes`; `what` says
  // what the file should be ("IDX file").
  InputFile(const std::string& path, uint64_t max_bytes, const std::string& what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // bytes present when it was opened

  // Up to n bytes from `offset` into dst; fewer only at the end of the file.
  size_t read_some(uint64_t offset, void* dst, size_t n) const;
  // Exactly n bytes from `offset`; IoError when the file ends first (it shrank since open).
  void read_exact(uint64_t offset, void* dst, size_t n) const;
  // The whole file (size() bytes).
  std::vector<uint8_t> read_all() const;
  std::string read_all_text() const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole regular file at `path`, at most `max_bytes` (see InputFile).
std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// "12.3 MiB (12900000 bytes)": sizes in error messages.
std::string describe_bytes(uint64_t bytes);

// An allocation that failed, as an IoError naming the file, what was being allocated and how
// much: no bare std::bad_alloc reaches the user.
[[noreturn]] void throw_out_of_memory(const std::string& path, const std::string& what,
                                      uint64_t bytes);

// Runs `allocate` (which allocates about `bytes` for `what`, read from `path`), turning
// std::bad_alloc and std::length_error into throw_out_of_memory.
template <class F>
decltype(auto) allocating(const std::string& path, const std::string& what, uint64_t bytes,
                          F&& allocate) {
  try {
    return allocate();
  } catch (const std::bad_alloc&) {
    throw_out_of_memory(path, what, bytes);
  } catch (const std::length_error&) {
    throw_out_of_memory(path, what, bytes);
  }
}

}  // namespace tandem
