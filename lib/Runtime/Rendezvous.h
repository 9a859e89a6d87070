//===- Rendezvous.h - Meetings of the devices of a run ----------*- C++ -*-===//
//
// Private to the runtime. The room where the devices of a run meet: a
// reduce_grad sums one param's gradient over the devices holding it, and
// gradient clipping sums the squared norms of every device. It owns the
// meetings, their lock and the run's failed flag that releases every
// waiting device when one fails.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_RENDEZVOUS_H
#define PIPE_RUNTIME_RENDEZVOUS_H

#include "Memory.h"

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace pipe_rt {

class Rendezvous {
public:
  /// What the devices of one meeting deposit.
  struct Meeting {
    std::map<int, BufferPtr> grads; // reduce_grad: per device
    std::map<int, double> sums;     // clipping: per device
    std::set<int> arrived;
    size_t collected = 0, left = 0;
  };

  /// A meeting: (param, step, group); param -1 for clipping; group: the
  /// in-process replica whose devices meet (>= 0), or -1 - d for the
  /// meeting of every replica's copy of program device d.
  using Key = std::tuple<int, int, int>;

  /// `device` deposits into meeting `key`, waits until every device of
  /// `participants` arrived, then calls `collect` (both under the lock),
  /// waits until every one collected, drops its deposit and returns the
  /// status of its collect. Without them within `watchdogSeconds`, or when
  /// the run failed, returns PIPE_RT_TIMEOUT / PIPE_RT_ABORTED with `error`
  /// (": ..." to follow the action's name).
  int meet(Key key, int device, const std::set<int> &participants,
           double watchdogSeconds,
           const std::function<void(Meeting &)> &deposit,
           const std::function<int(Meeting &)> &collect, std::string &error);
  /// The run failed: every waiting and later meeting aborts.
  void abort();
  /// Drops every meeting (and the buffers deposited).
  void clear();

private:
  std::mutex mu;
  std::condition_variable cv;
  bool failed = false;
  std::map<Key, Meeting> meetings;
};

} // namespace pipe_rt

#endif // PIPE_RUNTIME_RENDEZVOUS_H
