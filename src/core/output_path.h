// Where an output goes, and whether it may go there. Every file tandem writes passes here:
// - a symlink is written through: its target is replaced, the link stays;
// - an existing FIFO, device, socket or directory is refused (replacing it with a regular
//   file would destroy it; as root, --metrics-json /dev/null would have replaced /dev/null);
// - the directory must let us create a file: probed by creating and removing one;
// - temporary files of writers that died (name.tandem-tmp.PID with no such process) in that
//   directory are removed.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tandem {

// The regular file `path` stands for (through symlinks), or IoError naming `path` and why
// it cannot be an output.
std::string resolve_output_path(const std::string& path);

// resolve_output_path, then a real creation probe in the target's directory.
void check_output_path(const std::string& path);

// The temporary name write_file_atomically uses beside `target` for this process.
std::string temporary_path_for(const std::string& target);
// Removes `dir`'s temporary files of processes that no longer exist; returns how many.
int remove_stale_temporaries(const std::string& dir);

// Two paths that name one file (the same target, or one hard-linked file).
bool same_file(const std::string& a, const std::string& b);

// ConfigError when two outputs are one file, or an output is one of the inputs. Each entry
// is (what, path), e.g. ("--save", "m.tandem"); empty paths are skipped.
void check_outputs_distinct(const std::vector<std::pair<std::string, std::string>>& outputs,
                            const std::vector<std::pair<std::string, std::string>>& inputs);

}  // namespace tandem
