//===- Profile.cpp - Phase breakdown of recorded actions ------------------===//

#include "Profile.h"

#include "Format.h"

#include <algorithm>

namespace pipe_rt {

Phase phaseOf(const std::string &actionName) {
  auto startsWith = [&](const char *prefix) {
    return actionName.rfind(prefix, 0) == 0;
  };
  // The executor names compute actions "<kind> stage '<s>' ..." (Executor.cpp,
  // describe()); backward parts are "backward.input" / "backward.weight".
  if (startsWith("forward"))
    return Phase::Forward;
  if (startsWith("recompute"))
    return Phase::Recompute;
  if (startsWith("backward"))
    return Phase::Backward;
  if (startsWith("update"))
    return Phase::Update;
  return Phase::Other;
}

Profile summarize(const std::vector<TraceEvent> &events,
                  const std::vector<std::pair<int, int>> &links, int numDevices,
                  double from) {
  struct Lanes {
    std::vector<Interval> phase[5], compute, h2d, d2h, transfer;
  };
  std::vector<Lanes> lanes(static_cast<size_t>(std::max(numDevices, 0)));
  std::vector<Interval> optimizer;
  Profile p;
  double first = 0, last = 0;
  bool any = false;
  for (const TraceEvent &e : events) {
    if (e.start < from)
      continue;
    first = any ? std::min(first, e.start) : e.start;
    last = any ? std::max(last, e.end) : e.end;
    any = true;
    Interval span{e.start, e.end};
    int device = e.index;
    if (e.kind == TrackKind::Host) {
      optimizer.push_back(span);
      continue;
    }
    if (e.kind == TrackKind::Link)
      device = e.index >= 0 && size_t(e.index) < links.size()
                   ? links[size_t(e.index)].first
                   : -1;
    if (device < 0 || device >= numDevices)
      continue;
    Lanes &l = lanes[size_t(device)];
    switch (e.kind) {
    case TrackKind::Compute:
      l.phase[int(phaseOf(e.name))].push_back(span);
      l.compute.push_back(span);
      break;
    case TrackKind::H2D:
      l.h2d.push_back(span);
      break;
    case TrackKind::D2H:
      l.d2h.push_back(span);
      break;
    case TrackKind::Link:
      l.transfer.push_back(span);
      break;
    case TrackKind::Host:
      break;
    }
  }
  p.window = any ? last - first : 0;

  std::vector<Interval> anyCompute, anyActivity;
  for (Lanes &l : lanes) {
    DeviceProfile d;
    for (int k = 0; k < 5; ++k)
      d.phase[k] = measure(unite(l.phase[k]));
    std::vector<Interval> compute = unite(l.compute);
    std::vector<Interval> h2d = unite(l.h2d), d2h = unite(l.d2h);
    std::vector<Interval> copies = l.h2d;
    copies.insert(copies.end(), l.d2h.begin(), l.d2h.end());
    copies = unite(std::move(copies));
    d.compute = measure(compute);
    d.h2d = measure(h2d);
    d.d2h = measure(d2h);
    d.copy = measure(copies);
    d.copyExposed = measure(subtract(copies, compute));
    d.transfer = measure(unite(l.transfer));
    p.devices.push_back(d);
    anyCompute.insert(anyCompute.end(), compute.begin(), compute.end());
    anyActivity.insert(anyActivity.end(), compute.begin(), compute.end());
    anyActivity.insert(anyActivity.end(), copies.begin(), copies.end());
    anyActivity.insert(anyActivity.end(), l.transfer.begin(), l.transfer.end());
  }
  std::vector<Interval> opt = unite(optimizer);
  p.optimizer = measure(opt);
  p.optimizerExposed = measure(subtract(opt, unite(std::move(anyCompute))));
  anyActivity.insert(anyActivity.end(), opt.begin(), opt.end());
  p.idle = p.window - measure(unite(std::move(anyActivity)));
  return p;
}

std::string profileJson(const Profile &p) {
  auto ms = [](double seconds) { return format("%.3f", seconds * 1e3); };
  auto fraction = [](double part, double whole) {
    return whole > 0 ? format("%.4f", part / whole) : std::string("null");
  };
  static const char *const kPhases[] = {"forward", "recompute", "backward",
                                        "update", "other"};
  std::string out = "{\"window_ms\":" + ms(p.window) +
                    ",\"optimizer_ms\":" + ms(p.optimizer) +
                    ",\"optimizer_exposed_ms\":" + ms(p.optimizerExposed) +
                    ",\"idle_ms\":" + ms(p.idle) + ",\"devices\":[";
  for (size_t i = 0; i < p.devices.size(); ++i) {
    const DeviceProfile &d = p.devices[i];
    out += i ? ",{" : "{";
    for (int k = 0; k < 5; ++k)
      out += format("\"%s_ms\":", kPhases[k]) + ms(d.phase[k]) + ",";
    out += "\"compute_ms\":" + ms(d.compute) + ",\"h2d_ms\":" + ms(d.h2d) +
           ",\"d2h_ms\":" + ms(d.d2h) + ",\"copy_ms\":" + ms(d.copy) +
           ",\"copy_exposed_ms\":" + ms(d.copyExposed) +
           ",\"copy_exposed_fraction\":" + fraction(d.copyExposed, d.copy) +
           ",\"transfer_ms\":" + ms(d.transfer) + "}";
  }
  return out + "]}";
}

} // namespace pipe_rt
