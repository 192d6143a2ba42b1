// Output files that are either whole or absent: the CLI's JSON and CSV results are written
// to a temporary file beside the target, flushed to disk, then renamed over it.
#pragma once

#include <string>
#include <string_view>

namespace tandem::cli {

// Fails early, before a long run, when `path` cannot be written (core/output_path.h: a FIFO,
// device or directory, a missing directory, or one where a probe file cannot be created).
// "-" is standard output.
void check_writable(const std::string& path);

// The library's write_file_atomically (temp file, fsync, rename), under the CLI's name, or
// standard output for "-". IoError naming `path` on any failure.
void write_text_atomically(const std::string& path, std::string_view contents);

}  // namespace tandem::cli
