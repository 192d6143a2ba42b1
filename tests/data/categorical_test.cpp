#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixture_files.h"
#include "tandem/datasets.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ToCategorical, OneHotWithExplicitClasses) {
  const Tensor t = to_categorical(ByteArray({3}, {2, 0, 1}), 4);
  EXPECT_EQ(t.shape(), Shape({3, 4}));             // (count, num_classes)
  EXPECT_THAT(t.values(), ElementsAre(0, 0, 1, 0,  //
                                      1, 0, 0, 0,  //
                                      0, 1, 0, 0));
}

TEST(ToCategorical, InfersClassesFromMaxLabel) {
  const Tensor t = to_categorical(ByteArray({2}, {0, 2}));
  EXPECT_EQ(t.shape(), Shape({2, 3}));
  EXPECT_THAT(t.values(), ElementsAre(1, 0, 0, 0, 0, 1));
}

TEST(ToCategorical, ColumnLabelsLikeKeras) {
  // Keras drops a trailing dim of 1: (count, 1) -> (count, num_classes).
  const Tensor t = to_categorical(ByteArray({2, 1}, {1, 0}), 2);
  EXPECT_EQ(t.shape(), Shape({2, 2}));
  EXPECT_THAT(t.values(), ElementsAre(0, 1, 1, 0));
}

TEST(ToCategorical, LabelOutOfRangeNamesItsIndex) {
  const auto e = fixtures::thrown<ConfigError>([] {
    to_categorical(ByteArray({4}, {0, 9, 10, 1}), 10);
  });
  ASSERT_TRUE(e);
  EXPECT_THAT(e->what(), HasSubstr("label 10 at index 2"));
  EXPECT_THAT(e->what(), HasSubstr("num_classes=10"));
}

TEST(ToCategorical, EmptyLabelsNeedExplicitClasses) {
  EXPECT_THROW(to_categorical(ByteArray({0})), ConfigError);
  EXPECT_EQ(to_categorical(ByteArray({0}), 10).shape(), Shape({0, 10}));
}

TEST(ToCategorical, ImagesAreNotLabels) {
  EXPECT_THROW(to_categorical(ByteArray({2, 3})), ShapeError);
}

}  // namespace
}  // namespace tandem
