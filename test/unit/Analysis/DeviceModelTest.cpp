//===- DeviceModelTest.cpp - Unit tests for device and cluster models -----===//

#include "pipe/Analysis/DeviceModel.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlir::pipe;

namespace {

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value)
    return "";
  return llvm::toString(value.takeError());
}

/// A small valid model: two devices of one kind, then a third, one link.
constexpr const char *kBase = R"json({
  "name": "test",
  "notes": ["line one", "line two"],
  "devices": [
    {"name": "gpu", "count": 2, "memory_bytes": 1000,
     "memory_bandwidth": 1e9,
     "peak_flops": {"f32": 10e12, "bf16": 100e12},
     "achieved_flops": {"bf16": 80e12}},
    {"name": "other", "memory_bytes": 2000, "memory_bandwidth": 2e9,
     "peak_flops": {"f32": 5e12}, "backward_flops": 4e12,
     "backward_memory_bandwidth": 1.5e9, "notes": "slower"}
  ],
  "host": {"memory_bytes": 1000000, "cores": 4,
           "h2d_pinned": 10e9, "d2h_pinned": 9e9, "duplex_pinned": 15e9,
           "h2d_pageable": 3e9, "d2h_pageable": 2e9,
           "optimizer_params_per_second": 1e9, "run_overhead": 2e-3},
  "default_link": {"kind": "pcie-host", "bandwidth": 8e9, "latency": 1e-5},
  "links": [
    {"from": 0, "to": 1, "bidirectional": true, "kind": "nvlink",
     "bandwidth": 100e9, "latency": 2e-6, "notes": "bridge"},
    {"from": 2, "to": 0, "kind": "pcie-p2p", "bandwidth": 20e9}
  ]
})json";

llvm::json::Value baseValue() {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(kBase);
  EXPECT_TRUE(bool(value));
  return std::move(*value);
}

/// kBase with `edit` applied, parsed under the name "test.json".
std::string errorAfter(std::function<void(llvm::json::Object &)> edit) {
  llvm::json::Value value = baseValue();
  edit(*value.getAsObject());
  std::string text;
  llvm::raw_string_ostream(text) << value;
  return errorOf(ClusterModel::parse(text, "test.json"));
}

llvm::json::Object &device(llvm::json::Object &root, unsigned i) {
  return *(*root.getArray("devices"))[i].getAsObject();
}

llvm::json::Object &link(llvm::json::Object &root, unsigned i) {
  return *(*root.getArray("links"))[i].getAsObject();
}

TEST(DeviceModel, ParsesAllFields) {
  llvm::Expected<ClusterModel> model = ClusterModel::parse(kBase, "base.json");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  EXPECT_EQ(model->name, "test");
  EXPECT_EQ(model->notes, "line one\nline two");
  ASSERT_EQ(model->getNumDevices(), 3u);
  EXPECT_EQ(model->devices[0], model->devices[1]);
  EXPECT_EQ(model->devices[0].name, "gpu");
  EXPECT_EQ(model->devices[0].memoryBytes, 1000u);
  EXPECT_EQ(model->devices[0].memoryBandwidth, 1e9);
  EXPECT_EQ(model->devices[2].name, "other");
  EXPECT_EQ(model->devices[2].notes, "slower");

  // getFlops: achieved, else peak, else f32 achieved/peak.
  EXPECT_EQ(model->devices[0].getFlops("bf16"), 80e12);
  EXPECT_EQ(model->devices[0].getFlops("f32"), 10e12);
  EXPECT_EQ(model->devices[0].getFlops("f16"), 10e12);
  EXPECT_EQ(model->devices[2].getFlops("bf16"), 5e12);

  const HostSpec &host = model->host;
  EXPECT_EQ(host.memoryBytes, 1000000u);
  EXPECT_EQ(host.cores, 4u);
  EXPECT_EQ(host.h2dPinned, 10e9);
  EXPECT_EQ(host.d2hPinned, 9e9);
  EXPECT_EQ(host.h2dPageable, 3e9);
  EXPECT_EQ(host.d2hPageable, 2e9);
  EXPECT_EQ(host.getDuplexPinned(), 15e9);
  EXPECT_EQ(host.optimizerParamsPerSecond, 1e9);
  EXPECT_EQ(host.runOverhead, 2e-3);

  // Links: the bidirectional override in both directions, a directed one,
  // the default elsewhere, and a device to itself.
  EXPECT_EQ(model->getLink(0, 1).kind, "nvlink");
  EXPECT_EQ(model->getLink(1, 0).kind, "nvlink");
  EXPECT_EQ(model->getLink(1, 0).notes, "bridge");
  EXPECT_EQ(model->getLink(0, 1).latency, 2e-6);
  EXPECT_EQ(model->getLink(2, 0).kind, "pcie-p2p");
  EXPECT_EQ(model->getLink(0, 2).kind, "pcie-host");
  EXPECT_EQ(model->getLink(0, 2).latency, 1e-5);
  EXPECT_EQ(model->getLink(1, 1).kind, "self");
  EXPECT_TRUE(std::isinf(model->getLink(1, 1).bandwidth));
  EXPECT_EQ(model->getLink(1, 1).getTransferTime(1e9), 0);
  EXPECT_DOUBLE_EQ(model->getLink(0, 2).getTransferTime(8e9), 1 + 1e-5);
  EXPECT_EQ(model->getLink(0, 2).getTransferTime(0), 0);
}

TEST(DeviceModel, RoundTripsThroughJSON) {
  llvm::Expected<ClusterModel> model = ClusterModel::parse(kBase, "base.json");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  std::string json = model->toJSON();
  llvm::Expected<ClusterModel> again = ClusterModel::parse(json, "again.json");
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError()) << "\n" << json;
  EXPECT_EQ(*model, *again);
  EXPECT_EQ(again->toJSON(), json);
  // Identical consecutive devices are grouped.
  EXPECT_NE(json.find("\"count\": 2"), std::string::npos) << json;

  // Equality notices a difference anywhere.
  ClusterModel changed = *model;
  changed.devices[1].achievedFlops["f16"] = 1;
  EXPECT_NE(changed, *model);
  changed = *model;
  changed.devices[2].backwardMemoryBandwidth = 0;
  EXPECT_NE(changed, *model);
  changed = *model;
  changed.host.duplexPinned = 0;
  EXPECT_NE(changed, *model);
  EXPECT_EQ(changed.host.getDuplexPinned(), 19e9);
  changed = *model;
  changed.links.erase({2, 0});
  EXPECT_NE(changed, *model);
}

TEST(DeviceModel, WithDeviceCount) {
  llvm::Expected<ClusterModel> model = ClusterModel::parse(kBase, "base.json");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  ClusterModel two = model->withDeviceCount(2);
  EXPECT_EQ(two.name, "test-x2");
  ASSERT_EQ(two.getNumDevices(), 2u);
  EXPECT_EQ(two.devices[1], model->devices[0]);
  EXPECT_EQ(two.getLink(0, 1).kind, "nvlink"); // kept: both ends < 2
  EXPECT_EQ(two.links.size(), 2u);             // (2, 0) dropped
  EXPECT_EQ(two.host, model->host);

  ClusterModel eight = model->withDeviceCount(8);
  ASSERT_EQ(eight.getNumDevices(), 8u);
  EXPECT_EQ(eight.devices[7], model->devices[0]);
  EXPECT_EQ(eight.getLink(7, 3), model->defaultLink);
  EXPECT_EQ(model->withDeviceCount(3).name, "test");
  // The result is a valid model.
  llvm::Expected<ClusterModel> reparsed =
      ClusterModel::parse(eight.toJSON(), "eight.json");
  ASSERT_TRUE(bool(reparsed)) << llvm::toString(reparsed.takeError());
  EXPECT_EQ(*reparsed, eight);
}

TEST(DeviceModel, Hosts) {
  // Four devices on two hosts: the default link within a host, the
  // inter-host link across, an override wins over both.
  llvm::Expected<ClusterModel> model = ClusterModel::parse(R"json({
    "name": "two-hosts",
    "devices": [{"name": "gpu", "count": 4, "memory_bytes": 1000,
                 "memory_bandwidth": 1e9, "peak_flops": {"f32": 1e12}}],
    "host": {"h2d_pinned": 1e9, "d2h_pinned": 1e9},
    "default_link": {"kind": "nvlink", "bandwidth": 400e9},
    "links": [{"from": 1, "to": 2, "kind": "pcie-p2p", "bandwidth": 20e9}],
    "hosts": {"devices_per_host": 2,
              "inter_host_link": {"kind": "infiniband", "bandwidth": 50e9,
                                  "latency": 5e-6}}
  })json",
                                                           "hosts.json");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  EXPECT_EQ(model->devicesPerHost, 2u);
  EXPECT_EQ(model->getLink(0, 1).kind, "nvlink");
  EXPECT_EQ(model->getLink(0, 2).kind, "infiniband");
  EXPECT_EQ(model->getLink(3, 0).kind, "infiniband");
  EXPECT_EQ(model->getLink(1, 2).kind, "pcie-p2p");
  EXPECT_EQ(model->getLink(2, 3).kind, "nvlink");
  llvm::Expected<ClusterModel> reparsed =
      ClusterModel::parse(model->toJSON(), "again.json");
  ASSERT_TRUE(bool(reparsed)) << llvm::toString(reparsed.takeError());
  EXPECT_EQ(*reparsed, *model);
  // withDeviceCount keeps the hosts.
  EXPECT_EQ(model->withDeviceCount(4).getLink(1, 3).kind, "infiniband");
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

TEST(DeviceModelPresets, AllParseAndRoundTrip) {
  llvm::ArrayRef<llvm::StringRef> names = ClusterModel::getPresetNames();
  ASSERT_GE(names.size(), 3u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (llvm::StringRef expected : {"h200", "rtx2080ti-x8", "v100-l2l"})
    EXPECT_TRUE(llvm::is_contained(names, expected)) << expected.str();

  for (llvm::StringRef name : names) {
    SCOPED_TRACE(name.str());
    llvm::Expected<ClusterModel> model = ClusterModel::getPreset(name);
    ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
    EXPECT_EQ(model->name, name);
    EXPECT_FALSE(model->notes.empty()) << "presets cite their sources";
    for (const DeviceSpec &device : model->devices)
      EXPECT_FALSE(device.notes.empty());
    EXPECT_FALSE(model->host.notes.empty());
    EXPECT_FALSE(model->defaultLink.notes.empty());
    llvm::Expected<ClusterModel> again =
        ClusterModel::parse(model->toJSON(), "again.json");
    ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
    EXPECT_EQ(*model, *again);
    llvm::Expected<ClusterModel> looked = ClusterModel::lookup(name);
    ASSERT_TRUE(bool(looked)) << llvm::toString(looked.takeError());
    EXPECT_EQ(*looked, *model);
  }
}

TEST(DeviceModelPresets, Figures) {
  llvm::Expected<ClusterModel> ftpipe = ClusterModel::getPreset("rtx2080ti-x8");
  ASSERT_TRUE(bool(ftpipe)) << llvm::toString(ftpipe.takeError());
  ASSERT_EQ(ftpipe->getNumDevices(), 8u);
  EXPECT_EQ(ftpipe->devices[7].memoryBytes, 11000000000u);
  EXPECT_EQ(ftpipe->devices[0].getFlops("f32"), 13.4e12);
  EXPECT_EQ(ftpipe->devices[0].getFlops("f16"), 54e12);
  EXPECT_EQ(ftpipe->devices[0].getFlops("bf16"), 13.4e12);
  EXPECT_EQ(ftpipe->getLink(0, 7).bandwidth, 12e9);
  EXPECT_EQ(ftpipe->getLink(0, 7).kind, "pcie-host");

  llvm::Expected<ClusterModel> l2l = ClusterModel::getPreset("v100-l2l");
  ASSERT_TRUE(bool(l2l)) << llvm::toString(l2l.takeError());
  ASSERT_EQ(l2l->getNumDevices(), 1u);
  EXPECT_EQ(l2l->devices[0].memoryBandwidth, 900e9);
  EXPECT_EQ(l2l->devices[0].getFlops("f16"), 125e12);
  EXPECT_EQ(l2l->host.memoryBytes, uint64_t(512) << 30);

  llvm::Expected<ClusterModel> h200 = ClusterModel::getPreset("h200");
  ASSERT_TRUE(bool(h200)) << llvm::toString(h200.takeError());
  ASSERT_EQ(h200->getNumDevices(), 1u);
  const DeviceSpec &gpu = h200->devices[0];
  EXPECT_EQ(gpu.memoryBytes, uint64_t(139) << 30);
  EXPECT_EQ(gpu.getFlops("bf16"), 713e12);
  EXPECT_EQ(gpu.getFlops("tf32"), 457e12);
  EXPECT_EQ(gpu.peakFlops.lookup("bf16"), 990e12);
  EXPECT_EQ(h200->host.h2dPinned, 55.4e9);
  EXPECT_EQ(h200->host.d2hPinned, 55.2e9);
  EXPECT_EQ(h200->host.getDuplexPinned(), 98.7e9);
  EXPECT_EQ(h200->host.h2dPageable, 8.4e9);
  EXPECT_EQ(h200->host.optimizerParamsPerSecond, 3.8e9);
  EXPECT_EQ(h200->host.cores, 16u);
}

TEST(DeviceModelPresets, LookupByPathAndErrors) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("device-model", dir));
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "mine.json");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << kBase;
  }
  llvm::Expected<ClusterModel> model = ClusterModel::lookup(path);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  EXPECT_EQ(model->name, "test");
  llvm::Expected<ClusterModel> loaded = ClusterModel::loadFile(path);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(*loaded, *model);

  // Errors from a file name the file.
  llvm::SmallString<128> bad(dir);
  llvm::sys::path::append(bad, "bad.json");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(bad, ec);
    ASSERT_FALSE(ec);
    os << "{\"name\": \"x\"}";
  }
  std::string err = errorOf(ClusterModel::lookup(bad));
  EXPECT_EQ(err, (bad + ": devices: missing required field").str());
  llvm::sys::fs::remove_directories(dir);

  std::string missing = (dir + "/none.json").str();
  err = errorOf(ClusterModel::lookup(missing));
  EXPECT_EQ(err.find(missing + ": cannot open"), 0u) << err;
  err = errorOf(ClusterModel::lookup("a100-x8"));
  EXPECT_NE(err.find("'a100-x8' is neither a device preset"), std::string::npos)
      << err;
  EXPECT_NE(err.find("h200"), std::string::npos) << err;
  err = errorOf(ClusterModel::getPreset("nope"));
  EXPECT_NE(err.find("unknown device preset 'nope' (known: h200,"),
            std::string::npos)
      << err;
}

//===----------------------------------------------------------------------===//
// Errors: each names the file and the JSON path
//===----------------------------------------------------------------------===//

TEST(DeviceModelErrors, Syntax) {
  EXPECT_EQ(errorOf(ClusterModel::parse("[1]", "test.json")),
            "test.json: expected a JSON object at the top level");
  std::string err = errorOf(ClusterModel::parse("{\"name\": ", "test.json"));
  EXPECT_EQ(err.find("test.json: invalid JSON: "), 0u) << err;
  EXPECT_EQ(errorOf(ClusterModel::parse(
                R"({"devices": [{"name": "a", "name": "b"}]})", "test.json")),
            "test.json: devices[0].name: duplicate field");
  EXPECT_EQ(errorOf(ClusterModel::parse(R"({"name": "a", "name": "b"})",
                                        "test.json")),
            "test.json: name: duplicate field");
}

TEST(DeviceModelErrors, Fields) {
  using Object = llvm::json::Object;
  struct Case {
    std::function<void(Object &)> edit;
    const char *message;
  } cases[] = {
      // Top level.
      {[](Object &o) { o["colour"] = "red"; },
       "colour: unknown field (expected one of: name, devices, host, "
       "default_link, links, hosts, notes)"},
      // Hosts.
      {[](Object &o) {
         o["hosts"] = Object{{"devices_per_host", 2},
                             {"inter_host_link",
                              Object{{"kind", "infiniband"},
                                     {"bandwidth", 1e9}}}};
       },
       "hosts.devices_per_host: expected a positive count that divides the 3 "
       "devices"},
      {[](Object &o) {
         o["hosts"] = Object{{"devices_per_host", 3}};
       },
       "hosts.inter_host_link: missing required field"},
      {[](Object &o) {
         o["hosts"] = Object{{"devices_per_host", 3},
                             {"inter_host_link", Object{{"kind", "ib"}}}};
       },
       "hosts.inter_host_link.bandwidth: missing required field"},
      {[](Object &o) { o.erase("name"); }, "name: missing required field"},
      {[](Object &o) { o["name"] = ""; }, "name: expected a non-empty string"},
      {[](Object &o) { o["name"] = 3; }, "name: expected a non-empty string"},
      {[](Object &o) { o["notes"] = 3; },
       "notes: expected a string or an array of strings"},
      {[](Object &o) {
         o["notes"] = llvm::json::Array{"a", 1};
       },
       "notes[1]: expected a string"},
      {[](Object &o) { o.erase("devices"); },
       "devices: missing required field"},
      {[](Object &o) { o["devices"] = llvm::json::Array{}; },
       "devices: expected a non-empty array of devices"},
      {[](Object &o) { o["devices"] = Object{}; },
       "devices: expected a non-empty array of devices"},
      {[](Object &o) { o.erase("host"); }, "host: missing required field"},
      {[](Object &o) { o["host"] = 1; }, "host: expected an object"},
      {[](Object &o) { o.erase("default_link"); },
       "default_link: missing required field"},
      // Devices.
      {[](Object &o) { (*o.getArray("devices"))[1] = 5; },
       "devices[1]: expected an object"},
      {[](Object &o) { device(o, 1).erase("name"); },
       "devices[1].name: missing required field"},
      {[](Object &o) { device(o, 0).erase("memory_bytes"); },
       "devices[0].memory_bytes: missing required field"},
      {[](Object &o) { device(o, 0)["memory_bytes"] = -1; },
       "devices[0].memory_bytes: expected a positive integer"},
      {[](Object &o) { device(o, 0)["memory_bytes"] = 0; },
       "devices[0].memory_bytes: expected a positive integer"},
      {[](Object &o) { device(o, 0)["memory_bytes"] = 1.5; },
       "devices[0].memory_bytes: expected a positive integer"},
      {[](Object &o) { device(o, 0)["memory_bytes"] = "11 GiB"; },
       "devices[0].memory_bytes: expected a positive integer"},
      {[](Object &o) { device(o, 0)["memory_bandwidth"] = 0; },
       "devices[0].memory_bandwidth: expected a positive number"},
      {[](Object &o) { device(o, 0)["memory_bandwidth"] = "fast"; },
       "devices[0].memory_bandwidth: expected a positive number"},
      {[](Object &o) { device(o, 0)["count"] = 0; },
       "devices[0].count: expected a positive integer"},
      {[](Object &o) { device(o, 0)["count"] = 1000000; },
       "devices[0].count: expected at most 65536, got 1000000"},
      {[](Object &o) { device(o, 0)["hbm"] = 1; },
       "devices[0].hbm: unknown field (expected one of: name, count, "
       "memory_bytes, memory_bandwidth, peak_flops, achieved_flops, "
       "backward_flops, backward_memory_bandwidth, notes)"},
      {[](Object &o) { device(o, 1).erase("peak_flops"); },
       "devices[1].peak_flops: missing required field"},
      {[](Object &o) {
         device(o, 1)["peak_flops"] = Object{{"bf16", 1e12}};
       },
       "devices[1].peak_flops.f32: missing required field"},
      {[](Object &o) {
         device(o, 0)["peak_flops"] = Object{{"fp16", 1e12}};
       },
       "devices[0].peak_flops.fp16: unknown field (expected one of: f64, f32, "
       "tf32, bf16, f16, f8, i8)"},
      {[](Object &o) {
         device(o, 0)["peak_flops"] = Object{{"f32", -1}};
       },
       "devices[0].peak_flops.f32: expected a positive number"},
      {[](Object &o) { device(o, 0)["achieved_flops"] = 3; },
       "devices[0].achieved_flops: expected an object"},
      {[](Object &o) { device(o, 0)["backward_flops"] = 0; },
       "devices[0].backward_flops: expected a positive number"},
      {[](Object &o) { device(o, 0)["backward_flops"] = 1e12; },
       "devices[0].backward_memory_bandwidth: missing: backward_flops and "
       "backward_memory_bandwidth come together"},
      {[](Object &o) { device(o, 1)["backward_memory_bandwidth"] = "slow"; },
       "devices[1].backward_memory_bandwidth: expected a positive number"},
      {[](Object &o) {
         device(o, 0)["achieved_flops"] = Object{{"bf16", 200e12}};
       },
       "devices[0].achieved_flops.bf16: exceeds peak_flops.bf16 (2e+14 > "
       "1e+14)"},
      // Host.
      {[](Object &o) { o.getObject("host")->erase("h2d_pinned"); },
       "host.h2d_pinned: missing required field"},
      {[](Object &o) { (*o.getObject("host"))["d2h_pinned"] = 0; },
       "host.d2h_pinned: expected a positive number"},
      {[](Object &o) { (*o.getObject("host"))["cores"] = 1.5; },
       "host.cores: expected a positive integer"},
      {[](Object &o) { (*o.getObject("host"))["duplex_pinned"] = 20e9; },
       "host.duplex_pinned: exceeds h2d_pinned + d2h_pinned"},
      {[](Object &o) { (*o.getObject("host"))["h2d_pageable"] = -3; },
       "host.h2d_pageable: expected a positive number"},
      {[](Object &o) { (*o.getObject("host"))["pinned"] = 1; },
       "host.pinned: unknown field"},
      // Links.
      {[](Object &o) { o.getObject("default_link")->erase("kind"); },
       "default_link.kind: missing required field"},
      {[](Object &o) { (*o.getObject("default_link"))["kind"] = "self"; },
       "default_link.kind: 'self' is reserved for a device to itself"},
      {[](Object &o) { (*o.getObject("default_link"))["bandwidth"] = 0; },
       "default_link.bandwidth: expected a positive number"},
      {[](Object &o) { (*o.getObject("default_link"))["latency"] = -1; },
       "default_link.latency: expected a non-negative number"},
      {[](Object &o) { (*o.getObject("host"))["run_overhead"] = -1; },
       "host.run_overhead: expected a non-negative number"},
      {[](Object &o) { (*o.getObject("default_link"))["from"] = 0; },
       "default_link.from: unknown field"},
      {[](Object &o) { o["links"] = Object{}; },
       "links: expected an array of links"},
      {[](Object &o) { (*o.getArray("links"))[1] = "x"; },
       "links[1]: expected an object"},
      {[](Object &o) { link(o, 1).erase("from"); },
       "links[1].from: missing required field"},
      {[](Object &o) { link(o, 1)["from"] = -1; },
       "links[1].from: expected a device index"},
      {[](Object &o) { link(o, 1)["to"] = 3; },
       "links[1].to: device index 3 out of range (the model has 3 devices)"},
      {[](Object &o) { link(o, 1)["to"] = 2; },
       "links[1].to: a link needs two distinct devices"},
      {[](Object &o) { link(o, 0)["bidirectional"] = "yes"; },
       "links[0].bidirectional: expected true or false"},
      {[](Object &o) {
         link(o, 1)["from"] = 1;
         link(o, 1)["to"] = 0;
       },
       "links[1]: a second link from device 1 to device 0"},
      {[](Object &o) { link(o, 0).erase("bandwidth"); },
       "links[0].bandwidth: missing required field"},
      // Rates below 1 per second and times over 1e6 s make the planners'
      // times overflow to inf (a simulator report that is not JSON).
      {[](Object &o) {
         device(o, 0)["peak_flops"] = Object{{"f32", 5e-324}};
       },
       "devices[0].peak_flops.f32: expected a rate of at least 1 per second, "
       "got 4.94066e-324"},
      {[](Object &o) { device(o, 0)["memory_bandwidth"] = 0.5; },
       "devices[0].memory_bandwidth: expected a rate of at least 1 per "
       "second, got 0.5"},
      {[](Object &o) { link(o, 0)["latency"] = 1e300; },
       "links[0].latency: expected at most 1e+06 seconds, got 1e+300"},
  };
  for (const Case &c : cases) {
    std::string err = errorAfter(c.edit);
    std::string expected = std::string("test.json: ") + c.message;
    EXPECT_EQ(err.substr(0, expected.size()), expected) << err;
  }
  // The unedited base parses, so each failure above is due to its edit.
  EXPECT_EQ(errorAfter([](Object &) {}), "");
}

TEST(DeviceModelErrors, NonFiniteNumbers) {
  std::string text = kBase;
  size_t at = text.find("\"memory_bandwidth\": 1e9");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, strlen("\"memory_bandwidth\": 1e9"),
               "\"memory_bandwidth\": 1e400");
  EXPECT_EQ(errorOf(ClusterModel::parse(text, "test.json")),
            "test.json: devices[0].memory_bandwidth: expected a positive "
            "number");
}

} // namespace
