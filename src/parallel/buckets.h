// Gradient buckets: contiguous ranges of the flat gradient buffer, in the order backward
// finishes them (last layer first), each at least bucket_bytes (the first one may be
// smaller, like DDP's 1 MB first bucket, so communication starts early).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "model/graph.h"

namespace tandem::detail {

struct Bucket {
  int64_t offset = 0;  // floats into the flat buffer
  int64_t count = 0;
  int layers = 0;  // layers with parameters whose gradients it holds
};

std::vector<Bucket> make_buckets(const Graph& graph, int64_t bucket_bytes,
                                 int64_t first_bucket_bytes);

// Elements per pass of the sharded reducers' update: a chunk is summed, updated and copied
// while it sits in L2.
inline constexpr int64_t kUpdateChunk = 16384;

// Part `part` of `parts` of `count` elements, as [begin, end) in whole 64-byte lines (16
// floats), so replicas sharing a buffer never write the same cache line. Trailing parts may
// be empty.
inline std::pair<int64_t, int64_t> aligned_share(int64_t count, int parts, int part) {
  const int64_t per = ((count + parts - 1) / parts + 15) / 16 * 16;
  return {std::min(count, per * part), std::min(count, per * (part + 1))};
}

// Maps the ranges a GradReadyListener receives to their bucket.
class BucketIndex {
 public:
  explicit BucketIndex(const std::vector<Bucket>& buckets) : buckets_(buckets) {}
  // The bucket holding [offset, offset + count).
  int find(int64_t offset) const;

 private:
  const std::vector<Bucket>& buckets_;
};

}  // namespace tandem::detail
