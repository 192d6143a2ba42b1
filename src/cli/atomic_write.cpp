#include "cli/atomic_write.h"

#include <cstdio>

#include "core/atomic_file.h"
#include "core/output_path.h"

namespace tandem::cli {

void check_writable(const std::string& path) {
  if (path == "-") return;  // standard output
  check_output_path(path);
}

void write_text_atomically(const std::string& path, std::string_view contents) {
  if (path == "-") {
    std::fwrite(contents.data(), 1, contents.size(), stdout);
    std::fflush(stdout);
    return;
  }
  write_file_atomically(path, contents);
}

}  // namespace tandem::cli
