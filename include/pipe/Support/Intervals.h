//===- Intervals.h - Unions and differences of time intervals ---*- C++ -*-===//
//
// Busy and exposed times of a timeline: the simulator (lib/Scheduling) and
// the runtime's profile (lib/Runtime, which builds without LLVM) both
// measure "a copy running while no compute runs" with these. Plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_INTERVALS_H
#define PIPE_SUPPORT_INTERVALS_H

#include <algorithm>
#include <vector>

namespace mlir::pipe {

struct Interval {
  double start, end;
};

/// Sorted, disjoint intervals covering the same points as `intervals`
/// (empty and inverted ones dropped).
inline std::vector<Interval> unite(std::vector<Interval> intervals) {
  intervals.erase(
      std::remove_if(intervals.begin(), intervals.end(),
                     [](const Interval &i) { return !(i.end > i.start); }),
      intervals.end());
  std::sort(
      intervals.begin(), intervals.end(),
      [](const Interval &a, const Interval &b) { return a.start < b.start; });
  std::vector<Interval> merged;
  for (const Interval &i : intervals) {
    if (!merged.empty() && i.start <= merged.back().end)
      merged.back().end = std::max(merged.back().end, i.end);
    else
      merged.push_back(i);
  }
  return merged;
}

/// Total length of a united set.
inline double measure(const std::vector<Interval> &united) {
  double total = 0;
  for (const Interval &i : united)
    total += i.end - i.start;
  return total;
}

/// Points of `a` not in `b`; both united.
inline std::vector<Interval> subtract(const std::vector<Interval> &a,
                                      const std::vector<Interval> &b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (Interval rest : a) {
    // Skip the parts of b that end before this interval starts.
    while (j < b.size() && b[j].end <= rest.start)
      ++j;
    for (size_t k = j; k < b.size() && b[k].start < rest.end; ++k) {
      if (b[k].start > rest.start)
        out.push_back({rest.start, b[k].start});
      rest.start = std::max(rest.start, b[k].end);
    }
    if (rest.end > rest.start)
      out.push_back(rest);
  }
  return out;
}

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_INTERVALS_H
