#include "core/output_path.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "tandem/error.h"

namespace fs = std::filesystem;

namespace tandem {
namespace {

constexpr const char* kTemporaryMark = ".tandem-tmp.";

const char* kind_of(const fs::file_status& status) {
  switch (status.type()) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

fs::path directory_of(const fs::path& path) {
  return path.parent_path().empty() ? fs::path(".") : path.parent_path();
}

// `path` with every symlink it is followed through, dangling or not.
fs::path follow_links(const std::string& path) {
  fs::path target = path;
  std::error_code error;
  for (int hops = 0; fs::is_symlink(fs::symlink_status(target, error)); ++hops) {
    if (hops == 40) throw IoError(path, "too many levels of symbolic links");
    const fs::path link = fs::read_symlink(target, error);
    if (error) throw IoError(path, "cannot read the symbolic link: " + error.message());
    target = link.is_absolute() ? link : directory_of(target) / link;
  }
  return target;
}

}  // namespace

std::string resolve_output_path(const std::string& path) {
  if (path.empty()) throw IoError(path, "empty output path");
  const fs::path target = follow_links(path);
  std::error_code error;
  const fs::file_status status = fs::status(target, error);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    throw IoError(path, std::string("is ") + kind_of(status) +
                            "; tandem writes only regular files (it would replace this one)");
  }
  return target.lexically_normal().string();
}

std::string temporary_path_for(const std::string& target) {
  const fs::path p = target;
  return (directory_of(p) /
          ("." + p.filename().string() + kTemporaryMark + std::to_string(::getpid())))
      .string();
}

void check_output_path(const std::string& path) {
  const std::string target = resolve_output_path(path);
  const fs::path dir = directory_of(target);
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw IoError(path, "directory " + dir.string() + " does not exist");
  }
  const std::string probe = temporary_path_for(target);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw IoError(path, "cannot create a file in " + dir.string() + ": " + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

int remove_stale_temporaries(const std::string& dir) {
  int removed = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const size_t mark = name.rfind(kTemporaryMark);
    if (mark == std::string::npos || name[0] != '.') continue;
    const char* digits = name.c_str() + mark + std::strlen(kTemporaryMark);
    const char* end = name.c_str() + name.size();
    long pid = 0;
    const auto [rest, parsed] = std::from_chars(digits, end, pid);
    if (parsed != std::errc() || rest != end || pid <= 0) continue;
    // Only a writer that is gone: kill(pid, 0) fails with ESRCH.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    if (fs::is_regular_file(entry.symlink_status(ignored)) && fs::remove(entry.path(), ignored)) {
      ++removed;
    }
  }
  return removed;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error);
  return fs::weakly_canonical(follow_links(a), error) ==
         fs::weakly_canonical(follow_links(b), error);
}

void check_outputs_distinct(const std::vector<std::pair<std::string, std::string>>& outputs,
                            const std::vector<std::pair<std::string, std::string>>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [what, path] = outputs[i];
    if (path.empty() || path == "-") continue;
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (!outputs[j].second.empty() && outputs[j].second != "-" &&
          same_file(path, outputs[j].second)) {
        throw ConfigError(what + " " + path + " and " + outputs[j].first + " " + outputs[j].second +
                          " are the same file; one would overwrite the other");
      }
    }
    for (const auto& [input_what, input] : inputs) {
      if (!input.empty() && same_file(path, input)) {
        throw ConfigError(what + " " + path + " is " + input_what + " " + input +
                          ", which this run reads; writing it would destroy it");
      }
    }
  }
}

}  // namespace tandem
