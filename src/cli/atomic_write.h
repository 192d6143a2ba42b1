// Output files that are either whole or absent: the CLI's JSON and CSV results are written
// to a temporary file beside the target, flushed to disk, then renamed over it.
#pragma once

#include <string>
#include <string_view>

namespace tandem::cli {

// Fails early, before a long run, when `path` cannot be written: IoError naming it when its
// directory is missing or not writable, or when it is itself a directory.
void check_writable(const std::string& path);

// The library's write_file_atomically (temp file, fsync, rename), under the CLI's name.
// IoError naming `path` on any failure; the temporary file is removed then.
void write_text_atomically(const std::string& path, std::string_view contents);

}  // namespace tandem::cli
