//===- DeviceModel.cpp - Device and cluster models ------------------------===//
//
// The JSON reader is deliberately strict: a typo in a field name or a
// bandwidth given in GB/s instead of bytes/s silently skews every plan made
// from the model, so unknown fields, missing required fields, wrong types and
// non-positive rates are all errors that name the file and the JSON path.
//
//===----------------------------------------------------------------------===//

#include "pipe/Analysis/DeviceModel.h"
#include "pipe/Support/InputFile.h"
#include "pipe/Support/JSONUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::pipe;

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

double DeviceSpec::getFlops(llvm::StringRef dtype) const {
  for (llvm::StringRef key : {dtype, llvm::StringRef("f32")}) {
    auto achieved = achievedFlops.find(key);
    if (achieved != achievedFlops.end() && achieved->second > 0)
      return achieved->second;
    auto peak = peakFlops.find(key);
    if (peak != peakFlops.end() && peak->second > 0)
      return peak->second;
  }
  return 0;
}

double LinkSpec::getTransferTime(double bytes) const {
  if (bytes <= 0)
    return 0;
  return latency + bytes / bandwidth;
}

double HostSpec::getDuplexPinned() const {
  return duplexPinned > 0 ? duplexPinned : h2dPinned + d2hPinned;
}

const LinkSpec &ClusterModel::getLink(unsigned from, unsigned to) const {
  assert(from < devices.size() && to < devices.size() &&
         "device index out of range");
  if (from == to) {
    static const LinkSpec self{"self", std::numeric_limits<double>::infinity(),
                               0, "a device to itself: no transfer"};
    return self;
  }
  auto it = links.find({from, to});
  if (it != links.end())
    return it->second;
  if (devicesPerHost && from / devicesPerHost != to / devicesPerHost)
    return interHostLink;
  return defaultLink;
}

ClusterModel ClusterModel::withDeviceCount(unsigned n) const {
  assert(n >= 1 && !devices.empty() && "need at least one device");
  ClusterModel result;
  result.name = n == devices.size() ? name : name + "-x" + std::to_string(n);
  result.devices.assign(n, devices.front());
  result.host = host;
  result.defaultLink = defaultLink;
  result.devicesPerHost = devicesPerHost;
  result.interHostLink = interHostLink;
  for (const auto &[pair, link] : links)
    if (pair.first < n && pair.second < n)
      result.links[pair] = link;
  result.notes = notes;
  return result;
}

//===----------------------------------------------------------------------===//
// Equality
//===----------------------------------------------------------------------===//

static bool equalMaps(const llvm::StringMap<double> &a,
                      const llvm::StringMap<double> &b) {
  if (a.size() != b.size())
    return false;
  for (const auto &entry : a) {
    auto it = b.find(entry.getKey());
    if (it == b.end() || it->second != entry.getValue())
      return false;
  }
  return true;
}

bool mlir::pipe::operator==(const DeviceSpec &a, const DeviceSpec &b) {
  return a.name == b.name && a.memoryBytes == b.memoryBytes &&
         a.memoryBandwidth == b.memoryBandwidth &&
         equalMaps(a.peakFlops, b.peakFlops) &&
         equalMaps(a.achievedFlops, b.achievedFlops) &&
         a.backwardFlops == b.backwardFlops &&
         a.backwardMemoryBandwidth == b.backwardMemoryBandwidth &&
         a.notes == b.notes;
}

bool mlir::pipe::operator==(const LinkSpec &a, const LinkSpec &b) {
  return a.kind == b.kind && a.bandwidth == b.bandwidth &&
         a.latency == b.latency && a.notes == b.notes;
}

bool mlir::pipe::operator==(const HostSpec &a, const HostSpec &b) {
  return a.memoryBytes == b.memoryBytes && a.cores == b.cores &&
         a.h2dPinned == b.h2dPinned && a.d2hPinned == b.d2hPinned &&
         a.h2dPageable == b.h2dPageable && a.d2hPageable == b.d2hPageable &&
         a.duplexPinned == b.duplexPinned &&
         a.optimizerParamsPerSecond == b.optimizerParamsPerSecond &&
         a.runOverhead == b.runOverhead && a.notes == b.notes;
}

bool mlir::pipe::operator==(const ClusterModel &a, const ClusterModel &b) {
  return a.name == b.name && a.devices == b.devices && a.host == b.host &&
         a.defaultLink == b.defaultLink && a.links == b.links &&
         a.devicesPerHost == b.devicesPerHost &&
         a.interHostLink == b.interHostLink && a.notes == b.notes;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// The dtype keys accepted in peak_flops / achieved_flops.
static constexpr llvm::StringLiteral kFlopsDTypes[] = {
    "f64", "f32", "tf32", "bf16", "f16", "f8", "i8"};

/// Upper bound on a device entry's "count", so that a typo cannot make the
/// reader allocate millions of entries.
static constexpr uint64_t kMaxDeviceCount = 1 << 16;

/// Upper bound on a time (a link's latency, the run overhead): 11 days.
static constexpr double kMaxSeconds = 1e6;

static std::string formatNumber(double value) {
  std::string result;
  llvm::raw_string_ostream(result) << llvm::format("%g", value);
  return result;
}

namespace {
class ModelParser {
public:
  explicit ModelParser(llvm::StringRef sourceName) : sourceName(sourceName) {}

  llvm::Error error(const llvm::Twine &path, const llvm::Twine &message) {
    std::string where = path.str();
    return llvm::createStringError(
        std::errc::invalid_argument, "%s",
        (sourceName + ": " + (where.empty() ? "" : where + ": ") + message)
            .str()
            .c_str());
  }

  static std::string join(llvm::StringRef path, llvm::StringRef key) {
    return path.empty() ? key.str() : (path + "." + key).str();
  }

  /// Rejects keys outside `allowed`.
  llvm::Error checkFields(const llvm::json::Object &object,
                          llvm::StringRef path,
                          llvm::ArrayRef<llvm::StringLiteral> allowed) {
    // Report the alphabetically first offender so errors are deterministic.
    std::vector<std::string> unknown;
    for (const auto &entry : object)
      if (!llvm::is_contained(allowed, llvm::StringRef(entry.first)))
        unknown.push_back(entry.first.str());
    if (unknown.empty())
      return llvm::Error::success();
    llvm::sort(unknown);
    std::string expected;
    for (llvm::StringRef key : allowed)
      expected += (expected.empty() ? "" : ", ") + key.str();
    return error(join(path, unknown.front()),
                 "unknown field (expected one of: " + expected + ")");
  }

  llvm::Expected<const llvm::json::Object *>
  getObject(const llvm::json::Object &parent, llvm::StringRef path,
            llvm::StringRef key, bool required) {
    const llvm::json::Value *value = parent.get(key);
    if (!value) {
      if (required)
        return error(join(path, key), "missing required field");
      return nullptr;
    }
    if (const llvm::json::Object *object = value->getAsObject())
      return object;
    return error(join(path, key), "expected an object");
  }

  /// A positive, finite number: a rate (per second) of at least 1, or with
  /// `seconds` a time of at most kMaxSeconds, so that every time the
  /// planners derive (work over a rate, sums of times) stays finite.
  llvm::Error getPositiveNumber(const llvm::json::Object &object,
                                llvm::StringRef path, llvm::StringRef key,
                                bool required, double &result,
                                bool allowZero = false, bool seconds = false) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return required ? error(join(path, key), "missing required field")
                      : llvm::Error::success();
    std::optional<double> number = value->getAsNumber();
    if (!number || !std::isfinite(*number) || *number < 0 ||
        (*number == 0 && !allowZero))
      return error(join(path, key), allowZero ? "expected a non-negative number"
                                              : "expected a positive number");
    if (!seconds && *number != 0 && *number < 1)
      return error(join(path, key), "expected a rate of at least 1 per "
                                    "second, got " +
                                        formatNumber(*number));
    if (seconds && *number > kMaxSeconds)
      return error(join(path, key),
                   "expected at most " + formatNumber(kMaxSeconds) +
                       " seconds, got " + formatNumber(*number));
    result = *number;
    return llvm::Error::success();
  }

  /// A positive integer (written without fraction or exponent).
  llvm::Error
  getPositiveInteger(const llvm::json::Object &object, llvm::StringRef path,
                     llvm::StringRef key, bool required, uint64_t &result,
                     uint64_t max = std::numeric_limits<uint64_t>::max()) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return required ? error(join(path, key), "missing required field")
                      : llvm::Error::success();
    std::optional<uint64_t> number = value->getAsUINT64();
    if (!number || *number == 0)
      return error(join(path, key), "expected a positive integer");
    if (*number > max)
      return error(join(path, key), "expected at most " + llvm::Twine(max) +
                                        ", got " + llvm::Twine(*number));
    result = *number;
    return llvm::Error::success();
  }

  llvm::Error getString(const llvm::json::Object &object, llvm::StringRef path,
                        llvm::StringRef key, bool required,
                        std::string &result) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return required ? error(join(path, key), "missing required field")
                      : llvm::Error::success();
    std::optional<llvm::StringRef> str = value->getAsString();
    if (!str || str->empty())
      return error(join(path, key), "expected a non-empty string");
    result = str->str();
    return llvm::Error::success();
  }

  /// "notes" is a string or an array of strings (joined by newlines), so
  /// long citations stay readable in the preset files.
  llvm::Error getNotes(const llvm::json::Object &object, llvm::StringRef path,
                       std::string &result) {
    const llvm::json::Value *value = object.get("notes");
    if (!value)
      return llvm::Error::success();
    if (std::optional<llvm::StringRef> str = value->getAsString()) {
      result = str->str();
      return llvm::Error::success();
    }
    const llvm::json::Array *lines = value->getAsArray();
    if (!lines)
      return error(join(path, "notes"),
                   "expected a string or an array of strings");
    for (auto [i, line] : llvm::enumerate(*lines)) {
      std::optional<llvm::StringRef> str = line.getAsString();
      if (!str)
        return error(join(path, "notes") + "[" + std::to_string(i) + "]",
                     "expected a string");
      if (i)
        result += '\n';
      result += *str;
    }
    return llvm::Error::success();
  }

  llvm::Error getFlops(const llvm::json::Object &object, llvm::StringRef path,
                       llvm::StringRef key, bool required,
                       llvm::StringMap<double> &result) {
    llvm::Expected<const llvm::json::Object *> map =
        getObject(object, path, key, required);
    if (!map)
      return map.takeError();
    if (!*map)
      return llvm::Error::success();
    std::string mapPath = join(path, key);
    if (llvm::Error err = checkFields(**map, mapPath, kFlopsDTypes))
      return err;
    for (llvm::StringRef dtype : kFlopsDTypes) {
      double rate = 0;
      if (llvm::Error err = getPositiveNumber(**map, mapPath, dtype,
                                              /*required=*/false, rate))
        return err;
      if (rate > 0)
        result[dtype] = rate;
    }
    return llvm::Error::success();
  }

  llvm::Error parseDevice(const llvm::json::Object &object,
                          llvm::StringRef path, DeviceSpec &device,
                          uint64_t &count) {
    static constexpr llvm::StringLiteral fields[] = {
        "name",           "count",
        "memory_bytes",   "memory_bandwidth",
        "peak_flops",     "achieved_flops",
        "backward_flops", "backward_memory_bandwidth",
        "notes"};
    if (llvm::Error err = checkFields(object, path, fields))
      return err;
    if (llvm::Error err = getString(object, path, "name", true, device.name))
      return err;
    count = 1;
    if (llvm::Error err = getPositiveInteger(object, path, "count", false,
                                             count, kMaxDeviceCount))
      return err;
    if (llvm::Error err = getPositiveInteger(object, path, "memory_bytes", true,
                                             device.memoryBytes))
      return err;
    if (llvm::Error err = getPositiveNumber(object, path, "memory_bandwidth",
                                            true, device.memoryBandwidth))
      return err;
    if (llvm::Error err =
            getFlops(object, path, "peak_flops", true, device.peakFlops))
      return err;
    if (!device.peakFlops.count("f32"))
      return error(join(path, "peak_flops.f32"),
                   "missing required field (the rate used when a dtype has "
                   "no entry)");
    if (llvm::Error err = getFlops(object, path, "achieved_flops", false,
                                   device.achievedFlops))
      return err;
    for (llvm::StringRef dtype : kFlopsDTypes) {
      auto achieved = device.achievedFlops.find(dtype);
      if (achieved == device.achievedFlops.end())
        continue;
      auto peak = device.peakFlops.find(dtype);
      if (peak != device.peakFlops.end() && achieved->second > peak->second)
        return error(join(path, "achieved_flops." + dtype.str()),
                     "exceeds peak_flops." + dtype + " (" +
                         formatNumber(achieved->second) + " > " +
                         formatNumber(peak->second) + ")");
    }
    if (llvm::Error err = getPositiveNumber(object, path, "backward_flops",
                                            false, device.backwardFlops))
      return err;
    if (llvm::Error err =
            getPositiveNumber(object, path, "backward_memory_bandwidth", false,
                              device.backwardMemoryBandwidth))
      return err;
    // One fit gives both; either alone would mix it with the forward's.
    if ((device.backwardFlops > 0) != (device.backwardMemoryBandwidth > 0))
      return error(join(path, device.backwardFlops > 0
                                  ? "backward_memory_bandwidth"
                                  : "backward_flops"),
                   "missing: backward_flops and backward_memory_bandwidth "
                   "come together");
    return getNotes(object, path, device.notes);
  }

  llvm::Error parseHost(const llvm::json::Object &object, llvm::StringRef path,
                        HostSpec &host) {
    static constexpr llvm::StringLiteral fields[] = {
        "memory_bytes",  "cores",
        "h2d_pinned",    "d2h_pinned",
        "h2d_pageable",  "d2h_pageable",
        "duplex_pinned", "optimizer_params_per_second",
        "run_overhead",  "notes"};
    if (llvm::Error err = checkFields(object, path, fields))
      return err;
    if (llvm::Error err = getPositiveInteger(object, path, "memory_bytes",
                                             false, host.memoryBytes))
      return err;
    uint64_t cores = 0;
    if (llvm::Error err =
            getPositiveInteger(object, path, "cores", false, cores,
                               std::numeric_limits<unsigned>::max()))
      return err;
    host.cores = cores;
    struct {
      llvm::StringLiteral key;
      bool required;
      double *field;
    } rates[] = {
        {"h2d_pinned", true, &host.h2dPinned},
        {"d2h_pinned", true, &host.d2hPinned},
        {"h2d_pageable", false, &host.h2dPageable},
        {"d2h_pageable", false, &host.d2hPageable},
        {"duplex_pinned", false, &host.duplexPinned},
        {"optimizer_params_per_second", false, &host.optimizerParamsPerSecond},
    };
    for (auto &rate : rates)
      if (llvm::Error err = getPositiveNumber(object, path, rate.key,
                                              rate.required, *rate.field))
        return err;
    if (llvm::Error err = getPositiveNumber(object, path, "run_overhead", false,
                                            host.runOverhead,
                                            /*allowZero=*/true,
                                            /*seconds=*/true))
      return err;
    if (host.duplexPinned > host.h2dPinned + host.d2hPinned)
      return error(join(path, "duplex_pinned"),
                   "exceeds h2d_pinned + d2h_pinned");
    return getNotes(object, path, host.notes);
  }

  llvm::Error parseLinkFields(const llvm::json::Object &object,
                              llvm::StringRef path, LinkSpec &link) {
    if (llvm::Error err = getString(object, path, "kind", true, link.kind))
      return err;
    if (link.kind == "self")
      return error(join(path, "kind"),
                   "'self' is reserved for a device to itself");
    if (llvm::Error err =
            getPositiveNumber(object, path, "bandwidth", true, link.bandwidth))
      return err;
    if (llvm::Error err =
            getPositiveNumber(object, path, "latency", false, link.latency,
                              /*allowZero=*/true, /*seconds=*/true))
      return err;
    return getNotes(object, path, link.notes);
  }

  llvm::Error parseCluster(const llvm::json::Value &root, ClusterModel &model) {
    const llvm::json::Object *object = root.getAsObject();
    if (!object)
      return error("", "expected a JSON object at the top level");
    static constexpr llvm::StringLiteral fields[] = {
        "name", "devices", "host", "default_link", "links", "hosts", "notes"};
    if (llvm::Error err = checkFields(*object, "", fields))
      return err;
    if (llvm::Error err = getString(*object, "", "name", true, model.name))
      return err;
    if (llvm::Error err = getNotes(*object, "", model.notes))
      return err;

    // devices
    const llvm::json::Value *devices = object->get("devices");
    if (!devices)
      return error("devices", "missing required field");
    const llvm::json::Array *deviceArray = devices->getAsArray();
    if (!deviceArray || deviceArray->empty())
      return error("devices", "expected a non-empty array of devices");
    for (auto [i, entry] : llvm::enumerate(*deviceArray)) {
      std::string path = "devices[" + std::to_string(i) + "]";
      const llvm::json::Object *deviceObject = entry.getAsObject();
      if (!deviceObject)
        return error(path, "expected an object");
      DeviceSpec device;
      uint64_t count;
      if (llvm::Error err = parseDevice(*deviceObject, path, device, count))
        return err;
      if (model.devices.size() + count > kMaxDeviceCount)
        return error(path + ".count", "more than " +
                                          llvm::Twine(kMaxDeviceCount) +
                                          " devices in total");
      model.devices.insert(model.devices.end(), count, device);
    }

    // host
    llvm::Expected<const llvm::json::Object *> host =
        getObject(*object, "", "host", true);
    if (!host)
      return host.takeError();
    if (llvm::Error err = parseHost(**host, "host", model.host))
      return err;

    // default_link
    llvm::Expected<const llvm::json::Object *> defaultLink =
        getObject(*object, "", "default_link", true);
    if (!defaultLink)
      return defaultLink.takeError();
    static constexpr llvm::StringLiteral linkFields[] = {"kind", "bandwidth",
                                                         "latency", "notes"};
    if (llvm::Error err =
            checkFields(**defaultLink, "default_link", linkFields))
      return err;
    if (llvm::Error err =
            parseLinkFields(**defaultLink, "default_link", model.defaultLink))
      return err;

    // hosts
    if (object->get("hosts")) {
      llvm::Expected<const llvm::json::Object *> hosts =
          getObject(*object, "", "hosts", true);
      if (!hosts)
        return hosts.takeError();
      static constexpr llvm::StringLiteral hostsFields[] = {"devices_per_host",
                                                            "inter_host_link"};
      if (llvm::Error err = checkFields(**hosts, "hosts", hostsFields))
        return err;
      const llvm::json::Value *perHost = (*hosts)->get("devices_per_host");
      if (!perHost)
        return error("hosts.devices_per_host", "missing required field");
      std::optional<uint64_t> count = perHost->getAsUINT64();
      if (!count || *count == 0 || model.devices.size() % *count != 0)
        return error("hosts.devices_per_host",
                     "expected a positive count that divides the " +
                         llvm::Twine(model.devices.size()) + " devices");
      model.devicesPerHost = unsigned(*count);
      llvm::Expected<const llvm::json::Object *> interHost =
          getObject(**hosts, "hosts", "inter_host_link", true);
      if (!interHost)
        return interHost.takeError();
      if (llvm::Error err =
              checkFields(**interHost, "hosts.inter_host_link", linkFields))
        return err;
      if (llvm::Error err = parseLinkFields(
              **interHost, "hosts.inter_host_link", model.interHostLink))
        return err;
    }

    // links
    const llvm::json::Value *links = object->get("links");
    if (!links)
      return llvm::Error::success();
    const llvm::json::Array *linkArray = links->getAsArray();
    if (!linkArray)
      return error("links", "expected an array of links");
    for (auto [i, entry] : llvm::enumerate(*linkArray)) {
      std::string path = "links[" + std::to_string(i) + "]";
      const llvm::json::Object *linkObject = entry.getAsObject();
      if (!linkObject)
        return error(path, "expected an object");
      static constexpr llvm::StringLiteral fields[] = {
          "from",      "to",      "bidirectional", "kind",
          "bandwidth", "latency", "notes"};
      if (llvm::Error err = checkFields(*linkObject, path, fields))
        return err;
      unsigned endpoints[2];
      static constexpr llvm::StringLiteral endpointKeys[] = {"from", "to"};
      for (auto [k, key] : llvm::enumerate(endpointKeys)) {
        const llvm::json::Value *value = linkObject->get(key);
        if (!value)
          return error(join(path, key), "missing required field");
        std::optional<uint64_t> index = value->getAsUINT64();
        if (!index)
          return error(join(path, key), "expected a device index");
        if (*index >= model.devices.size())
          return error(join(path, key), "device index " + llvm::Twine(*index) +
                                            " out of range (the model has " +
                                            llvm::Twine(model.devices.size()) +
                                            " devices)");
        endpoints[k] = *index;
      }
      if (endpoints[0] == endpoints[1])
        return error(join(path, "to"), "a link needs two distinct devices");
      bool bidirectional = false;
      if (const llvm::json::Value *value = linkObject->get("bidirectional")) {
        std::optional<bool> flag = value->getAsBoolean();
        if (!flag)
          return error(join(path, "bidirectional"), "expected true or false");
        bidirectional = *flag;
      }
      LinkSpec link;
      if (llvm::Error err = parseLinkFields(*linkObject, path, link))
        return err;
      llvm::SmallVector<std::pair<unsigned, unsigned>, 2> pairs = {
          {endpoints[0], endpoints[1]}};
      if (bidirectional)
        pairs.push_back({endpoints[1], endpoints[0]});
      for (auto pair : pairs) {
        if (!model.links.emplace(pair, link).second)
          return error(path, "a second link from device " +
                                 llvm::Twine(pair.first) + " to device " +
                                 llvm::Twine(pair.second));
      }
    }
    return llvm::Error::success();
  }

private:
  llvm::StringRef sourceName;
};
} // namespace

llvm::Expected<ClusterModel> ClusterModel::parse(llvm::StringRef json,
                                                 llvm::StringRef sourceName) {
  ModelParser parser(sourceName);
  llvm::Expected<llvm::json::Value> root = llvm::json::parse(json);
  if (!root)
    return parser.error("",
                        "invalid JSON: " + llvm::toString(root.takeError()));
  if (std::optional<DuplicateJSONKey> dup = findDuplicateJSONKey(json)) {
    llvm::SmallVector<JSONPathSegment> path = dup->path;
    path.push_back({dup->key, std::nullopt});
    return parser.error(formatJSONPath(path), "duplicate field");
  }
  ClusterModel model;
  if (llvm::Error err = parser.parseCluster(*root, model))
    return std::move(err);
  return std::move(model);
}

llvm::Expected<ClusterModel> ClusterModel::loadFile(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readInputFile(path, /*isText=*/true);
  if (!buffer)
    return llvm::createStringError(
        (path + ": cannot open: " + llvm::toString(buffer.takeError())).str());
  return parse((*buffer)->getBuffer(), path);
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

namespace {
struct Preset {
  llvm::StringLiteral name;
  llvm::StringLiteral json;
};
} // namespace

// Generated at configure time by lib/Analysis/DevicePresets.cmake from
// presets/devices/*.json, sorted by name.
static constexpr Preset kPresets[] = {
#define PIPE_DEVICE_PRESET(NAME, JSON) {NAME, JSON},
#include "pipe/Analysis/DevicePresets.inc"
#undef PIPE_DEVICE_PRESET
};

llvm::ArrayRef<llvm::StringRef> ClusterModel::getPresetNames() {
  static const std::vector<llvm::StringRef> names = [] {
    std::vector<llvm::StringRef> result;
    for (const Preset &preset : kPresets)
      result.push_back(preset.name);
    // By name, not by file name ("h200-8x8.json" sorts before "h200.json").
    llvm::sort(result);
    return result;
  }();
  return names;
}

static std::string listPresets() {
  return llvm::join(ClusterModel::getPresetNames(), ", ");
}

llvm::Expected<ClusterModel> ClusterModel::getPreset(llvm::StringRef name) {
  for (const Preset &preset : kPresets)
    if (preset.name == name)
      return parse(preset.json, (name + ".json").str());
  return llvm::createStringError(
      std::errc::invalid_argument, "%s",
      ("unknown device preset '" + name + "' (known: " + listPresets() + ")")
          .str()
          .c_str());
}

llvm::Expected<ClusterModel>
ClusterModel::lookup(llvm::StringRef presetNameOrPath) {
  if (llvm::is_contained(getPresetNames(), presetNameOrPath))
    return getPreset(presetNameOrPath);
  // Anything that looks like a path is read as one, so that a missing file
  // is reported as such rather than as an unknown preset.
  if (llvm::sys::fs::exists(presetNameOrPath) ||
      presetNameOrPath.contains('/') || presetNameOrPath.ends_with(".json"))
    return loadFile(presetNameOrPath);
  return llvm::createStringError(
      std::errc::invalid_argument, "%s",
      ("'" + presetNameOrPath +
       "' is neither a device preset (known: " + listPresets() + ") nor a file")
          .str()
          .c_str());
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

static void writeNotes(llvm::json::OStream &json, const std::string &notes) {
  if (notes.empty())
    return;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(notes).split(lines, '\n');
  if (lines.size() == 1) {
    json.attribute("notes", notes);
    return;
  }
  json.attributeArray("notes", [&] {
    for (llvm::StringRef line : lines)
      json.value(line);
  });
}

static void writeFlops(llvm::json::OStream &json, llvm::StringRef key,
                       const llvm::StringMap<double> &flops) {
  if (flops.empty())
    return;
  json.attributeObject(key, [&] {
    // A fixed order (widest type first) keeps the output stable.
    for (llvm::StringRef dtype : kFlopsDTypes) {
      auto it = flops.find(dtype);
      if (it != flops.end())
        json.attribute(dtype, it->second);
    }
  });
}

static void writeLinkFields(llvm::json::OStream &json, const LinkSpec &link) {
  json.attribute("kind", link.kind);
  json.attribute("bandwidth", link.bandwidth);
  if (link.latency > 0)
    json.attribute("latency", link.latency);
  writeNotes(json, link.notes);
}

std::string ClusterModel::toJSON() const {
  std::string result;
  llvm::raw_string_ostream os(result);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("name", name);
    writeNotes(json, notes);
    json.attributeArray("devices", [&] {
      for (size_t i = 0, e = devices.size(); i < e;) {
        const DeviceSpec &device = devices[i];
        size_t count = 1;
        while (i + count < e && devices[i + count] == device)
          ++count;
        json.object([&] {
          json.attribute("name", device.name);
          if (count > 1)
            json.attribute("count", uint64_t(count));
          json.attribute("memory_bytes", device.memoryBytes);
          json.attribute("memory_bandwidth", device.memoryBandwidth);
          writeFlops(json, "peak_flops", device.peakFlops);
          writeFlops(json, "achieved_flops", device.achievedFlops);
          if (device.backwardFlops > 0)
            json.attribute("backward_flops", device.backwardFlops);
          if (device.backwardMemoryBandwidth > 0)
            json.attribute("backward_memory_bandwidth",
                           device.backwardMemoryBandwidth);
          writeNotes(json, device.notes);
        });
        i += count;
      }
    });
    json.attributeObject("host", [&] {
      if (host.memoryBytes)
        json.attribute("memory_bytes", host.memoryBytes);
      if (host.cores)
        json.attribute("cores", uint64_t(host.cores));
      json.attribute("h2d_pinned", host.h2dPinned);
      json.attribute("d2h_pinned", host.d2hPinned);
      if (host.h2dPageable > 0)
        json.attribute("h2d_pageable", host.h2dPageable);
      if (host.d2hPageable > 0)
        json.attribute("d2h_pageable", host.d2hPageable);
      if (host.duplexPinned > 0)
        json.attribute("duplex_pinned", host.duplexPinned);
      if (host.optimizerParamsPerSecond > 0)
        json.attribute("optimizer_params_per_second",
                       host.optimizerParamsPerSecond);
      if (host.runOverhead > 0)
        json.attribute("run_overhead", host.runOverhead);
      writeNotes(json, host.notes);
    });
    json.attributeObject("default_link",
                         [&] { writeLinkFields(json, defaultLink); });
    if (devicesPerHost) {
      json.attributeObject("hosts", [&] {
        json.attribute("devices_per_host", uint64_t(devicesPerHost));
        json.attributeObject("inter_host_link",
                             [&] { writeLinkFields(json, interHostLink); });
      });
    }
    if (!links.empty()) {
      json.attributeArray("links", [&] {
        for (const auto &[pair, link] : links) {
          json.object([&] {
            json.attribute("from", uint64_t(pair.first));
            json.attribute("to", uint64_t(pair.second));
            writeLinkFields(json, link);
          });
        }
      });
    }
  });
  os << '\n';
  return result;
}
