#include "model/job_check.h"

#include "tandem/error.h"

namespace tandem::detail {

uint64_t hash_text(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

void check_same_job(World& world, const std::vector<JobField>& fields) {
  std::vector<uint64_t> mine;
  mine.reserve(fields.size() + 1);
  mine.push_back(fields.size());  // the field list itself must match (same tandem build)
  for (const auto& f : fields) mine.push_back(f.value);
  const std::vector<uint64_t> all = world.allgather(mine);
  const size_t width = mine.size();
  std::string problems;
  for (int r = 1; r < world.size(); ++r) {
    const uint64_t* theirs = all.data() + r * width;
    if (theirs[0] != all[0]) {
      problems += "\n  rank " + std::to_string(r) + " runs another version of tandem";
      continue;
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      const uint64_t a = all[1 + i], b = theirs[1 + i];
      if (a == b) continue;
      problems +=
          "\n  rank " + std::to_string(r) + ": " + fields[i].name +
          (fields[i].hashed ? " differs from rank 0's"
                            : " is " + std::to_string(b) + ", rank 0's is " + std::to_string(a));
    }
  }
  if (!problems.empty()) {
    throw ConfigError(
        "the ranks of this job do not run the same training (every rank needs the "
        "same model, data and options):" +
        problems);
  }
}

}  // namespace tandem::detail
