//===- Profile.h - Phase breakdown of recorded actions ----------*- C++ -*-===//
//
// Private to the runtime. Turns the actions a session records (Session.h,
// TraceEvent) into the figures a pipeline or L2L benchmark reports: per
// device, the time spent in each compute phase, the time its copy engines
// were busy, how much of that copy time no compute hid ("exposed"), and the
// host optimizer's busy and exposed time. Busy times are measures of unions
// of intervals, so overlapping actions of one lane count once.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_PROFILE_H
#define PIPE_RUNTIME_PROFILE_H

#include "Session.h"

#include "pipe/Support/Intervals.h"

#include <string>
#include <vector>

namespace pipe_rt {

using mlir::pipe::Interval;
using mlir::pipe::measure;
using mlir::pipe::subtract;
using mlir::pipe::unite;

/// Compute phases, from the action that ran (the first word of its name).
enum class Phase { Forward, Recompute, Backward, Update, Other };
Phase phaseOf(const std::string &actionName);

/// Seconds, over a window of recorded actions.
struct DeviceProfile {
  double phase[5] = {0, 0, 0, 0, 0}; // busy time per Phase
  double compute = 0;                // any compute action
  double h2d = 0, d2h = 0;           // each copy lane
  double copy = 0;                   // either copy lane
  double copyExposed = 0;            // a copy and no compute
  double transfer = 0;               // device-to-device links from it
};

struct Profile {
  double window = 0; // first recorded start to last recorded end
  std::vector<DeviceProfile> devices;
  double optimizer = 0;        // host optimizer busy
  double optimizerExposed = 0; // optimizer busy, no device computing
  double idle = 0;             // no compute anywhere, no copy, no optimizer
};

/// The profile of `events` that start at or after `from` (seconds since
/// the trace epoch), for `numDevices` devices; `links` maps a link index to
/// its (from, to) devices.
Profile summarize(const std::vector<TraceEvent> &events,
                  const std::vector<std::pair<int, int>> &links, int numDevices,
                  double from);

/// The profile as a JSON object (milliseconds, fractions).
std::string profileJson(const Profile &profile);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_PROFILE_H
