// Files that are either whole or absent: written to a temporary file beside the target,
// fsync'ed, then renamed over it (the previous version survives a crash mid-write).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

// Writes `contents` to `path` atomically, under the output policy of output_path.h (through
// a symlink to its target; FIFOs, devices and directories refused; dead writers'
// temporaries beside it removed). IoError naming the path on any failure; the temporary
// file is removed then.
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace tandem
