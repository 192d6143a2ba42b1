// Buckets tile the flat gradient buffer in backward order, with a small first bucket.
#include "parallel/buckets.h"

#include <gtest/gtest.h>

#include "model/model_state.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

Model mlp() {
  auto in = Input({100});
  auto x = Dense(200, "relu")(in);  // 20 200 floats
  x = Dense(50, "relu")(x);         // 10 050
  x = Dense(7)(x);                  // 357
  return Model(in, x);
}

TEST(Buckets, TileTheBufferInBackwardOrder) {
  Model model = mlp();
  const Graph& g = *model.state().graph;
  for (int64_t bytes : {int64_t{1}, int64_t{4096}, int64_t{50000}, int64_t{1} << 30}) {
    const auto buckets = make_buckets(g, bytes, std::min<int64_t>(bytes, 1024));
    ASSERT_FALSE(buckets.empty());
    // Last layer first, contiguous, and together exactly [first layer's start, end).
    int64_t end = g.param_buffer_size();
    int layers = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      EXPECT_GT(buckets[b].count, 0);
      EXPECT_LE(buckets[b].offset + buckets[b].count, end);
      end = buckets[b].offset;
      layers += buckets[b].layers;
      if (b + 1 < buckets.size()) {
        EXPECT_GE(buckets[b].count * 4, b == 0 ? std::min<int64_t>(bytes, 1024) : bytes);
      }
    }
    EXPECT_EQ(end, 0);
    EXPECT_EQ(layers, 3);
  }
  // Tiny buckets: one per layer. Huge buckets: one small first bucket, then the rest.
  EXPECT_EQ(make_buckets(g, 1, 1).size(), 3u);
  const auto two = make_buckets(g, int64_t{1} << 30, 1024);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].layers, 1);
  EXPECT_THROW(make_buckets(g, 0, 0), ConfigError);
}

TEST(Buckets, IndexFindsTheBucketOfEachLayer) {
  Model model = mlp();
  const Graph& g = *model.state().graph;
  const auto buckets = make_buckets(g, 1, 1);
  const BucketIndex index(buckets);
  EXPECT_EQ(index.find(g.layers()[3].param_offset), 0);
  EXPECT_EQ(index.find(g.layers()[1].param_offset), 2);
  EXPECT_THROW(index.find(g.param_buffer_size() + 5), Error);
}

}  // namespace
}  // namespace tandem::detail
