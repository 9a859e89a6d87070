//===- JobQueue.h - One-thread FIFO of asynchronous jobs --------*- C++ -*-===//
//
// Private to the runtime. A device's copy engines (h2d, d2h) and the
// parameter server's host optimizer each run their jobs on one JobQueue, so
// the jobs of one engine run in the order the device programs queued them.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_JOBQUEUE_H
#define PIPE_RUNTIME_JOBQUEUE_H

#include "pipe/Runtime/Status.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace pipe_rt {

/// A one-thread FIFO of asynchronous jobs. A job returns a status and may
/// set an error message. `mu` guards the queue and every job's result.
class JobQueue {
public:
  struct Job {
    std::function<int(std::string &)> work;
    std::pair<int64_t, int64_t> priority;
    std::vector<std::pair<JobQueue *, std::shared_ptr<Job>>> after;
    /// Submitters still to join (submit's `holds`): the job does not run
    /// before every one released it.
    int holds = 0;
    bool done = false;
    int status = PIPE_RT_OK;
    std::string error;
  };
  using JobPtr = std::shared_ptr<Job>;
  /// A job of some queue that another queue's job must wait for.
  using Pending = std::pair<JobQueue *, JobPtr>;

  JobQueue();
  ~JobQueue(); // runs the remaining jobs (abandons joint ones), then joins
  /// Queues `work`, which will wait for `after` (jobs of other queues).
  /// The worker runs next, among the queued jobs whose `after` jobs are
  /// done, the one of the smallest `priority`, and when none is, the
  /// oldest; in submission order among equals (FIFO by default).
  /// With `holds` > 0 the job is joint: it waits until `holds` release()
  /// calls, each after adding its submitter's dependences with extend().
  JobPtr submit(std::function<int(std::string &)> work,
                std::pair<int64_t, int64_t> priority = {0, 0},
                std::vector<std::pair<JobQueue *, JobPtr>> after = {},
                int holds = 0);
  /// A joint job also waits for `more` (jobs of other queues).
  void extend(const JobPtr &job, const std::vector<Pending> &more);
  /// One submitter of a joint job joined; the last makes it runnable.
  void release(const JobPtr &job);
  /// A joint job whose submitters will not all join (the run failed): it
  /// runs at once and fails with PIPE_RT_ABORTED.
  void abandon(const JobPtr &job);
  /// Whether `job` of this queue has run.
  bool finished(const JobPtr &job);
  /// Blocks until `job` ran; returns its status.
  int wait(const JobPtr &job);

private:
  void abandonLocked(const JobPtr &job);

  std::mutex mu;
  std::condition_variable cv;
  std::deque<JobPtr> queue;
  bool stopping = false;
  std::thread worker;
};

/// Waits for jobs of other queues; returns the first error.
int waitFor(const std::vector<JobQueue::Pending> &jobs);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_JOBQUEUE_H
