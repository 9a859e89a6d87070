//===- Rendezvous.cpp - Meetings of the devices of a run ------------------===//

#include "Rendezvous.h"

#include "Format.h"

#include "pipe/Runtime/Status.h"

#include <chrono>

using namespace pipe_rt;

int Rendezvous::meet(Key key, int device, const std::set<int> &participants,
                     double watchdogSeconds,
                     const std::function<void(Meeting &)> &deposit,
                     const std::function<int(Meeting &)> &collect,
                     std::string &error) {
  std::unique_lock<std::mutex> lock(mu);
  Meeting &r = meetings[key];
  deposit(r);
  r.arrived.insert(device);
  cv.notify_all();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(watchdogSeconds);
  cv.wait_until(lock, deadline, [&] {
    return r.arrived.size() == participants.size() || failed;
  });
  if (r.arrived.size() != participants.size()) {
    if (failed) {
      error = ": aborted by an error on another device";
      return PIPE_RT_ABORTED;
    }
    std::string missing;
    for (int d : participants)
      if (!r.arrived.count(d))
        missing += (missing.empty() ? "" : ", ") + std::to_string(d);
    failed = true;
    cv.notify_all();
    error = format(": device(s) %s did not join within %g s", missing.c_str(),
                   watchdogSeconds);
    return PIPE_RT_TIMEOUT;
  }
  int st = collect(r);
  ++r.collected;
  cv.notify_all();
  // The others' collects read this device's deposit: each device drops its
  // own once every one has collected, so that a deposited buffer is freed
  // by its device's thread at this action, not by whichever device collects
  // last (its device's peak would depend on the order).
  cv.wait(lock, [&] { return r.collected == participants.size() || failed; });
  r.grads.erase(device);
  if (++r.left == participants.size())
    meetings.erase(key);
  return st;
}

void Rendezvous::abort() {
  std::lock_guard<std::mutex> lock(mu);
  failed = true;
  cv.notify_all();
}

void Rendezvous::clear() {
  std::lock_guard<std::mutex> lock(mu);
  meetings.clear();
}
