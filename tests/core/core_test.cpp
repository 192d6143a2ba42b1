#include <gtest/gtest.h>

#include <set>
#include <tuple>
#include <vector>

#include "core/parallel_for.h"
#include "core/rng.h"
#include "tandem/array.h"

namespace tandem {
namespace {

TEST(Array, ShapesReshapeAndErrors) {
  Tensor t({2, 3, 4});
  EXPECT_EQ(t.size(), 24);
  EXPECT_EQ(t.row_size(), 12);
  Tensor r = t.reshape({-1, 12});
  EXPECT_EQ(r.shape(), (Shape{2, 12}));
  r[5] = 7.f;
  EXPECT_EQ(t[5], 7.f);  // shared storage
  EXPECT_THROW(t.reshape({5, 5}), ShapeError);
  EXPECT_THROW(t.reshape({-1, -1}), ShapeError);
  EXPECT_THROW(Tensor({2, 2}, std::vector<float>(3)), ShapeError);
  EXPECT_EQ(shape_to_string({60000, 784}), "(60000, 784)");
  EXPECT_EQ(shape_to_string({5}), "(5,)");
}

TEST(Rng, RepeatableAndUnbiasedEnough) {
  Rng a(3), b(3), c(4);
  EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(a.next(), c.next());
  Rng r(1);
  std::vector<int> counts(10);
  for (int i = 0; i < 100000; ++i) ++counts[r.below(10)];
  for (int n : counts) EXPECT_NEAR(n, 10000, 500);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const float u = r.uniform();
    ASSERT_GE(u, 0.f);
    ASSERT_LT(u, 1.f);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
  EXPECT_NE(Rng::derive(1, 2), Rng::derive(1, 3));
}

// simd_for visits every index once, on threads past its grain and on the calling thread below
// it (and with one thread), and not beyond n.
TEST(SimdFor, VisitsEveryIndexOnceOnEitherPath) {
  for (const auto& [n, threads, grain] : std::vector<std::tuple<int64_t, int, int64_t>>{
           {0, 2, 8}, {7, 2, 8}, {8, 2, 8}, {1001, 2, 8}, {1001, 1, 8}, {1001, 2, 1 << 20}}) {
    std::vector<int> visits(static_cast<size_t>(n) + 1, 0);
    int* v = visits.data();
    simd_for(n, threads, grain, [=](int64_t i) { v[i] += 1; });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(visits[i], 1) << "n " << n << ", index " << i;
    EXPECT_EQ(visits[n], 0) << "n " << n;
  }
}

}  // namespace
}  // namespace tandem
