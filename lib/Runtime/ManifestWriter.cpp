//===- ManifestWriter.cpp - Writing the program manifest ------------------===//
//
// Shared by the compiler (PipeToHost) and the runtime's tests, so that every
// manifest the reader sees comes from one writer (ManifestSchema.h).
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/ManifestSchema.h"

#include <cstdio>

namespace pipe_rt {
namespace {

void appendInt(std::string &line, int64_t v) {
  line += ' ';
  line += std::to_string(v);
}

/// <n> then the n elements.
void appendList(std::string &line, const std::vector<int64_t> &values) {
  appendInt(line, int64_t(values.size()));
  for (int64_t v : values)
    appendInt(line, v);
}

void appendWord(std::string &line, const std::string &word) {
  line += ' ';
  line += word;
}

} // namespace

std::string &ManifestWriter::record(ManifestSection section,
                                    const char *keyword) {
  std::string &lines = sections[int(section)];
  lines += keyword;
  return lines;
}

void ManifestWriter::type(int id, const std::string &dtype,
                          const std::vector<int64_t> &shape) {
  std::string &line = record(ManifestSection::Type, "type");
  appendInt(line, id);
  appendWord(line, dtype);
  appendInt(line, int64_t(shape.size()));
  for (int64_t dim : shape)
    appendInt(line, dim);
  line += '\n';
}

void ManifestWriter::param(int id, const std::string &name, int type,
                           bool trainable) {
  std::string &line = record(ManifestSection::Param, "param");
  appendInt(line, id);
  appendWord(line, name);
  appendInt(line, type);
  appendInt(line, trainable ? 1 : 0);
  line += '\n';
}

void ManifestWriter::value(int id, int type) {
  std::string &line = record(ManifestSection::Value, "value");
  appendInt(line, id);
  appendInt(line, type);
  line += '\n';
}

void ManifestWriter::input(int k, int value) {
  std::string &line = record(ManifestSection::Input, "input");
  appendInt(line, k);
  appendInt(line, value);
  line += '\n';
}

void ManifestWriter::range(int k, int64_t bound,
                           const std::vector<int64_t> &exempt) {
  std::string &line = record(ManifestSection::Range, "range");
  appendInt(line, k);
  appendInt(line, bound);
  appendList(line, exempt);
  line += '\n';
}

void ManifestWriter::loss(int value, double seed) {
  std::string &line = record(ManifestSection::Loss, "loss");
  appendInt(line, value);
  // Enough digits to read back the same double.
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", seed);
  appendWord(line, text);
  line += '\n';
}

void ManifestWriter::metric(int value, const std::string &name) {
  std::string &line = record(ManifestSection::Loss, "metric");
  appendInt(line, value);
  appendWord(line, name);
  line += '\n';
}

void ManifestWriter::function(int id, const std::string &symbol,
                              const std::vector<int64_t> &args,
                              const std::vector<int64_t> &results) {
  std::string &line = record(ManifestSection::Function, "function");
  appendInt(line, id);
  appendWord(line, symbol);
  appendList(line, args);
  appendList(line, results);
  line += '\n';
}

void ManifestWriter::run(const ManifestRun &run) {
  std::string &line = record(ManifestSection::Run, "run");
  appendInt(line, run.id);
  appendWord(line, run.name);
  appendInt(line, run.forward);
  appendInt(line, run.bwdInput);
  appendInt(line, run.bwdWeight);
  appendInt(line, run.numSaved);
  for (const std::vector<int64_t> *list :
       {&run.params, &run.inputs, &run.outputs, &run.diffInputs,
        &run.diffResults, &run.diffParams})
    appendList(line, *list);
  line += '\n';
}

void ManifestWriter::fused(int run, int function) {
  std::string &line = record(ManifestSection::Fused, "fused");
  appendInt(line, run);
  appendInt(line, function);
  line += '\n';
}

void ManifestWriter::stage(int id, const std::string &name, int device,
                           const std::vector<int64_t> &runs) {
  std::string &line = record(ManifestSection::Stage, "stage");
  appendInt(line, id);
  appendWord(line, name);
  appendInt(line, device);
  appendList(line, runs);
  line += '\n';
}

void ManifestWriter::edge(int producer, int consumer,
                          const std::vector<int64_t> &values) {
  std::string &line = record(ManifestSection::Edge, "edge");
  appendInt(line, producer);
  appendInt(line, consumer);
  appendList(line, values);
  line += '\n';
}

void ManifestWriter::schedule(int id, const std::string &name,
                              const std::string &kind, int devices,
                              int microbatches, int steps, bool forwardOnly) {
  std::string &line = record(ManifestSection::Schedule, "schedule");
  appendInt(line, id);
  appendWord(line, name);
  appendWord(line, kind);
  appendInt(line, devices);
  appendInt(line, microbatches);
  appendInt(line, steps);
  appendInt(line, forwardOnly ? 1 : 0);
  line += '\n';
}

void ManifestWriter::device(int schedule, int device, uint64_t capacity,
                            const std::string &symbol) {
  std::string &line = record(ManifestSection::Schedule, "device");
  appendInt(line, schedule);
  appendInt(line, device);
  line += ' ';
  line += std::to_string(capacity);
  appendWord(line, symbol);
  line += '\n';
}

void ManifestWriter::ps(int schedule, int stage) {
  std::string &line = record(ManifestSection::Schedule, "ps");
  appendInt(line, schedule);
  appendInt(line, stage);
  line += '\n';
}

void ManifestWriter::versions(int schedule) {
  std::string &line = record(ManifestSection::Schedule, "versions");
  appendInt(line, schedule);
  line += '\n';
}

void ManifestWriter::replicas(int schedule, int count) {
  std::string &line = record(ManifestSection::Schedule, "replicas");
  appendInt(line, schedule);
  appendInt(line, count);
  line += '\n';
}

void ManifestWriter::peerOrder(int schedule) {
  std::string &line = record(ManifestSection::Schedule, "peer_order");
  appendInt(line, schedule);
  line += '\n';
}

void ManifestWriter::owns(int schedule, int stage,
                          const std::vector<int64_t> &params) {
  std::string &line = record(ManifestSection::Schedule, "owns");
  appendInt(line, schedule);
  appendInt(line, stage);
  appendList(line, params);
  line += '\n';
}

std::string ManifestWriter::str() const {
  std::string text = std::string(kManifestMagic) + " " +
                     std::to_string(kManifestVersion) + "\n";
  for (const std::string &lines : sections)
    text += lines;
  return text + "end\n";
}

} // namespace pipe_rt
