//===- TensorLayoutsTest.cpp - Public layouts as element strides ----------===//
#include "runtime/api/TensorLayouts.h"
#include "gtest/gtest.h"

using namespace fmhajit;
using api::TensorLayout;

namespace {

struct StrideCase {
  const char *label;
  TensorLayout layout;
  TensorShape shape;
  TensorStrides expected; ///< batch, row (seq), head
};

class Strides : public ::testing::TestWithParam<StrideCase> {};

TEST_P(Strides, Resolve) {
  const StrideCase &c = GetParam();
  TensorStrides s = resolveStrides(c.layout, c.shape);
  EXPECT_EQ(s.batch, c.expected.batch);
  EXPECT_EQ(s.row, c.expected.row);
  EXPECT_EQ(s.head, c.expected.head);
}

// Shape {batch, seq, heads, dim, varlen}.
INSTANTIATE_TEST_SUITE_P(
    Layouts, Strides,
    ::testing::Values(
        StrideCase{
            "Bshd", TensorLayout::bshd(), {2, 5, 3, 8, false}, {120, 24, 8}},
        StrideCase{
            "Bhsd", TensorLayout::bhsd(), {2, 5, 3, 8, false}, {120, 8, 40}},
        StrideCase{
            "VarlenThd", TensorLayout::bshd(), {1, 9, 3, 8, true}, {0, 24, 8}},
        StrideCase{
            "VarlenHtd", TensorLayout::bhsd(), {1, 9, 3, 8, true}, {0, 8, 72}},
        StrideCase{"Strided",
                   TensorLayout::strided(1000, 40, 10),
                   {2, 5, 3, 8, false},
                   {1000, 40, 10}},
        StrideCase{"StridedVarlenIgnoresBatch",
                   TensorLayout::strided(7, 40, 10),
                   {1, 5, 3, 8, true},
                   {0, 40, 10}}),
    [](const auto &info) { return std::string(info.param.label); });

std::vector<std::string> layoutErrors(const TensorLayout &layout,
                                      const TensorShape &shape, bool output) {
  ErrorList errors;
  checkLayout("o", layout, shape, output, errors);
  return takeProblems(errors.take()).messages;
}

TEST(Layouts, PackedAndPaddedOutputsAreFine) {
  TensorShape shape{2, 5, 3, 8, false};
  EXPECT_TRUE(layoutErrors(TensorLayout::bshd(), shape, true).empty());
  EXPECT_TRUE(layoutErrors(TensorLayout::bhsd(), shape, true).empty());
  EXPECT_TRUE(
      layoutErrors(TensorLayout::strided(200, 40, 10), shape, true).empty());
}

TEST(Layouts, OverlappingOutputIsRefused) {
  // Heads 4 elements apart but 8 wide: heads overlap.
  std::vector<std::string> errors = layoutErrors(
      TensorLayout::strided(120, 24, 4), {2, 5, 3, 8, false}, true);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("the head stride 4 makes output elements overlap"),
            std::string::npos)
      << errors[0];
}

TEST(Layouts, BroadcastInputIsAllowedButNotNegative) {
  TensorShape shape{2, 5, 3, 8, false};
  EXPECT_TRUE(
      layoutErrors(TensorLayout::strided(0, 8, 0), shape, false).empty());
  std::vector<std::string> errors =
      layoutErrors(TensorLayout::strided(0, -8, 0), shape, false);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("negative stride"), std::string::npos);
}

TEST(Layouts, SpanCoversTheLastElement) {
  TensorShape shape{2, 5, 3, 8, false};
  EXPECT_EQ(spanElements(shape, resolveStrides(TensorLayout::bshd(), shape)),
            240);
  EXPECT_EQ(spanElements(shape, {1000, 40, 10}), 1000 + 4 * 40 + 2 * 10 + 8);
}

} // namespace
