// Typed errors. Every error says what went wrong, where (file and byte offset, layer,
// parameter, rank) and, where it helps, what to do. Only the CLI's main turns them into
// exit codes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tandem {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A file could not be opened, read or written.
class IoError : public Error {
 public:
  IoError(const std::string& path, const std::string& what);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A file was read but its content is wrong: bad magic, truncated, corrupt, bad checksum.
class FormatError : public Error {
 public:
  FormatError(const std::string& path, int64_t offset, const std::string& what);
  // Where the fault has no byte offset of its own (an entry of an archive, an HDF5 object):
  // offset() is -1 and `what` names the part.
  FormatError(const std::string& path, const std::string& what);
  const std::string& path() const { return path_; }
  int64_t offset() const { return offset_; }

 private:
  std::string path_;
  int64_t offset_;
};

// Shapes that do not fit: model vs data, layer inputs, weights into another architecture.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A bad argument or name: unknown layer/loss/optimizer, batch_size <= 0, ...
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A failure inside a library we call (oneDNN, MPI, zlib): records the call and file:line.
class BackendError : public Error {
 public:
  using Error::Error;
};

// Another rank of a multi-process job died, hung or disagreed: the message names this
// rank and host and the operation that failed.
class CommError : public Error {
 public:
  using Error::Error;
};

// Numbers that went wrong: a loss that became NaN or infinite, weights that hold NaN.
class NumericError : public Error {
 public:
  using Error::Error;
};

}  // namespace tandem
