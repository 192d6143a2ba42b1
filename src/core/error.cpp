#include "tandem/error.h"

namespace tandem {

IoError::IoError(const std::string& path, const std::string& what)
    : Error(path + ": " + what), path_(path) {}

FormatError::FormatError(const std::string& path, int64_t offset, const std::string& what)
    : Error(path + " (offset " + std::to_string(offset) + "): " + what),
      path_(path),
      offset_(offset) {}

FormatError::FormatError(const std::string& path, const std::string& what)
    : Error(path + ": " + what), path_(path), offset_(-1) {}

}  // namespace tandem
