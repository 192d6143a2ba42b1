#include "train/job_check.h"

#include <algorithm>
#include <cstring>

#include "tandem/error.h"

namespace tandem::detail {

uint64_t hash_text(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

namespace {

// Every rank's host name (up to 64 bytes each), rank after rank.
std::vector<std::string> gather_hosts(World& world) {
  constexpr size_t kWords = 8;
  std::vector<uint64_t> mine(kWords, 0);
  std::memcpy(mine.data(), world.host().data(), std::min(world.host().size(), kWords * 8 - 1));
  const auto all = world.allgather(mine);
  std::vector<std::string> hosts;
  for (int r = 0; r < world.size(); ++r) {
    const char* name = reinterpret_cast<const char*>(all.data() + r * kWords);
    hosts.emplace_back(name, strnlen(name, kWords * 8));
  }
  return hosts;
}

}  // namespace

void check_same_job(World& world, const std::vector<JobField>& fields) {
  // First the number of fields (the same tandem build has the same list): an allgather
  // of different lengths would be erroneous MPI.
  const std::vector<uint64_t> counts = world.allgather({fields.size()});
  for (int r = 1; r < world.size(); ++r) {
    if (counts[r] != counts[0]) {
      throw ConfigError("rank " + std::to_string(r) + " runs another version of tandem (" +
                        std::to_string(counts[r]) + " job fields, rank 0 has " +
                        std::to_string(counts[0]) + ")");
    }
  }
  std::vector<uint64_t> mine;
  mine.reserve(fields.size() + 1);
  mine.push_back(fields.size());
  for (const auto& f : fields) mine.push_back(f.value);
  const std::vector<uint64_t> all = world.allgather(mine);
  const size_t width = mine.size();
  const std::vector<std::string> hosts = gather_hosts(world);
  std::string problems;
  for (int r = 1; r < world.size(); ++r) {
    const uint64_t* theirs = all.data() + r * width;
    if (theirs[0] != all[0]) {
      problems +=
          "\n  rank " + std::to_string(r) + " on " + hosts[r] + " runs another version of tandem";
      continue;
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      const uint64_t a = all[1 + i], b = theirs[1 + i];
      if (a == b) continue;
      problems +=
          "\n  rank " + std::to_string(r) + " on " + hosts[r] + ": " + fields[i].name +
          (fields[i].hashed ? " differs from rank 0's"
                            : " is " + std::to_string(b) + ", rank 0's is " + std::to_string(a));
    }
  }
  if (!problems.empty()) {
    throw ConfigError(
        "the ranks of this job do not run the same training (every rank needs the "
        "same model, data and options; rank 0 is on " +
        hosts[0] + "):" + problems);
  }
}

}  // namespace tandem::detail
