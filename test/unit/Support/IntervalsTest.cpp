//===- IntervalsTest.cpp - Unions and differences of time intervals -------===//

#include "pipe/Support/Intervals.h"

#include <gtest/gtest.h>

namespace {

using mlir::pipe::Interval;

std::vector<std::pair<double, double>> pairs(const std::vector<Interval> &v) {
  std::vector<std::pair<double, double>> out;
  for (const Interval &i : v)
    out.push_back({i.start, i.end});
  return out;
}

TEST(Intervals, UniteMergesOverlapsAndDropsEmpty) {
  auto u = mlir::pipe::unite({{5, 6}, {0, 2}, {1, 3}, {3, 4}, {7, 7}, {9, 8}});
  EXPECT_EQ(pairs(u), (std::vector<std::pair<double, double>>{{0, 4}, {5, 6}}));
  EXPECT_DOUBLE_EQ(mlir::pipe::measure(u), 5);
}

TEST(Intervals, Subtract) {
  auto a = mlir::pipe::unite({{0, 10}, {20, 30}});
  auto b = mlir::pipe::unite({{2, 3}, {5, 22}, {25, 26}, {29, 40}});
  EXPECT_EQ(pairs(mlir::pipe::subtract(a, b)),
            (std::vector<std::pair<double, double>>{
                {0, 2}, {3, 5}, {22, 25}, {26, 29}}));
  EXPECT_TRUE(mlir::pipe::subtract(a, a).empty());
  EXPECT_EQ(pairs(mlir::pipe::subtract(a, {})), pairs(a));
}

} // namespace
