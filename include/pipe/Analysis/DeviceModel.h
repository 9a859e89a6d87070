//===- DeviceModel.h - Device and cluster models ----------------*- C++ -*-===//
//
// What the planners know about the hardware: per-device memory, bandwidth and
// compute rates, the host (memory, transfer rates, optimizer throughput) and
// the links between devices. Every hardware constant the project uses lives
// in one of these models, never in a pass; models are read from JSON (see
// docs/device-model.md) and the presets in presets/devices/ are compiled into
// the library.
//
// All quantities are SI: bytes, bytes/s, FLOP/s, parameters/s, seconds.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_ANALYSIS_DEVICEMODEL_H
#define PIPE_ANALYSIS_DEVICEMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mlir::pipe {

struct DeviceSpec {
  std::string name;
  uint64_t memoryBytes = 0;
  /// Device memory (HBM/GDDR) bandwidth, bytes/s.
  double memoryBandwidth = 0;
  /// Peak rates by dtype ("f64", "f32", "tf32", "bf16", "f16", "f8", "i8"),
  /// FLOP/s. Parsed models always have "f32".
  llvm::StringMap<double> peakFlops;
  /// Sustained GEMM rates by dtype, FLOP/s (absent: fall back to peak).
  llvm::StringMap<double> achievedFlops;
  /// The rates of backward block code where they were fitted apart from
  /// the forward's (pipe-profile --fit-device-model on enough blocks):
  /// FLOP/s and bytes/s of t = flops/F + bytes/B; 0: the forward's.
  double backwardFlops = 0;
  double backwardMemoryBandwidth = 0;
  /// Where the numbers come from.
  std::string notes;

  /// The achieved rate for `dtype` if known, else its peak, else the f32
  /// achieved rate, else the f32 peak (0 only for hand-built specs that
  /// lack f32).
  double getFlops(llvm::StringRef dtype) const;
};

struct LinkSpec {
  /// "pcie-host", "pcie-p2p", "nvlink", "infiniband", "ethernet", "self".
  std::string kind;
  /// bytes/s, in the direction of the link.
  double bandwidth = 0;
  /// seconds per message.
  double latency = 0;
  std::string notes;

  /// Seconds to move `bytes` over this link (latency + bytes / bandwidth).
  double getTransferTime(double bytes) const;
};

struct HostSpec {
  /// 0 = unknown.
  uint64_t memoryBytes = 0;
  /// 0 = unknown.
  unsigned cores = 0;
  /// Host<->device copy rates, bytes/s per direction. Pinned rates are
  /// always known (> 0) in parsed models; pageable ones are 0 when unknown.
  double h2dPinned = 0, d2hPinned = 0, h2dPageable = 0, d2hPageable = 0;
  /// Total when both directions run at once (0 = the sum of the two).
  double duplexPinned = 0;
  /// Host AdamW throughput, parameters/s (0 = unknown).
  double optimizerParamsPerSecond = 0;
  /// Seconds the runtime spends per schedule run outside its actions
  /// (starting the device threads, copying inputs in, collecting losses);
  /// 0 = not modelled.
  double runOverhead = 0;
  std::string notes;

  /// duplexPinned, or h2dPinned + d2hPinned when it is 0.
  double getDuplexPinned() const;
};

struct ClusterModel {
  std::string name;
  std::vector<DeviceSpec> devices;
  HostSpec host;
  /// Between any two distinct devices unless `links` overrides the pair.
  LinkSpec defaultLink;
  /// Overrides, directed: (from, to) -> link.
  std::map<std::pair<unsigned, unsigned>, LinkSpec> links;
  /// Devices per host (0: a single host). Device i is on host i /
  /// devicesPerHost; devices on different hosts talk over interHostLink
  /// unless `links` overrides the pair, devices on one host over
  /// defaultLink.
  unsigned devicesPerHost = 0;
  LinkSpec interHostLink;
  std::string notes;

  /// The link from device `from` to device `to`: an override, else the
  /// inter-host link across hosts, else the default link. For from == to, a
  /// "self" link with infinite bandwidth and no latency.
  const LinkSpec &getLink(unsigned from, unsigned to) const;
  unsigned getNumDevices() const { return devices.size(); }
  /// A cluster of `n` (>= 1) copies of device 0 with the same host and
  /// default link, keeping the link overrides among the first `n` devices;
  /// named "<name>-x<n>" unless n equals the current count.
  ClusterModel withDeviceCount(unsigned n) const;

  /// Parses and validates the JSON format of docs/device-model.md. Errors
  /// read "<sourceName>: <json path>: <problem>".
  static llvm::Expected<ClusterModel> parse(llvm::StringRef json,
                                            llvm::StringRef sourceName);
  static llvm::Expected<ClusterModel> loadFile(llvm::StringRef path);
  /// A preset compiled into the library (presets/devices/<name>.json).
  static llvm::Expected<ClusterModel> getPreset(llvm::StringRef name);
  /// The preset names, sorted.
  static llvm::ArrayRef<llvm::StringRef> getPresetNames();
  /// A preset if `presetNameOrPath` names one, else a JSON file path.
  static llvm::Expected<ClusterModel> lookup(llvm::StringRef presetNameOrPath);
  /// Pretty JSON in the same format; parse(toJSON()) gives an equal model.
  /// Runs of identical devices are written as one entry with a "count".
  std::string toJSON() const;
};

/// Field-by-field equality (used by round-trip tests and toJSON's grouping).
bool operator==(const DeviceSpec &a, const DeviceSpec &b);
bool operator==(const LinkSpec &a, const LinkSpec &b);
bool operator==(const HostSpec &a, const HostSpec &b);
bool operator==(const ClusterModel &a, const ClusterModel &b);
inline bool operator!=(const DeviceSpec &a, const DeviceSpec &b) {
  return !(a == b);
}
inline bool operator!=(const LinkSpec &a, const LinkSpec &b) {
  return !(a == b);
}
inline bool operator!=(const HostSpec &a, const HostSpec &b) {
  return !(a == b);
}
inline bool operator!=(const ClusterModel &a, const ClusterModel &b) {
  return !(a == b);
}

} // namespace mlir::pipe

#endif // PIPE_ANALYSIS_DEVICEMODEL_H
