// Gradient buckets: contiguous ranges of the flat gradient buffer, in the order backward
// finishes them (last layer first), each at least bucket_bytes (the first one may be
// smaller, like DDP's 1 MB first bucket, so communication starts early).
#pragma once

#include <cstdint>
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
