#include "parallel/buckets.h"

#include <algorithm>

#include "tandem/error.h"

namespace tandem::detail {

std::vector<Bucket> make_buckets(const Graph& graph, int64_t bucket_bytes,
                                 int64_t first_bucket_bytes) {
  if (bucket_bytes <= 0) {
    throw ConfigError("bucket size must be > 0 bytes, got " + std::to_string(bucket_bytes));
  }
  std::vector<Bucket> buckets;
  const auto& layers = graph.layers();
  Bucket open;
  bool have_open = false;
  // Layers are laid out in forward order; backward finishes them in reverse.
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    if (it->param_count == 0) continue;
    if (!have_open) {
      open = {it->param_offset, 0, 0};
      have_open = true;
    }
    // Extend downwards: the bucket covers from this layer's start to the previous end
    // (alignment padding between slices included, so buckets tile the buffer).
    const int64_t end =
        open.count == 0 ? it->param_offset + it->param_count : open.offset + open.count;
    open.offset = it->param_offset;
    open.count = end - open.offset;
    ++open.layers;
    const int64_t limit = buckets.empty() ? first_bucket_bytes : bucket_bytes;
    if (open.count * static_cast<int64_t>(sizeof(float)) >= limit) {
      buckets.push_back(open);
      have_open = false;
    }
  }
  if (have_open) buckets.push_back(open);
  return buckets;
}

int BucketIndex::find(int64_t offset) const {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (offset >= buckets_[b].offset && offset < buckets_[b].offset + buckets_[b].count) {
      return static_cast<int>(b);
    }
  }
  throw Error("gradient range at offset " + std::to_string(offset) + " is in no bucket");
}

}  // namespace tandem::detail
