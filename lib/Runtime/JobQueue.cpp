//===- JobQueue.cpp - One-thread FIFO of asynchronous jobs ----------------===//

#include "JobQueue.h"

#include <algorithm>

using namespace pipe_rt;

JobQueue::JobQueue() {
  worker = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu);
    auto joined = [](const JobPtr &job) { return job->holds == 0; };
    while (true) {
      cv.wait(lock, [&] {
        return stopping || std::any_of(queue.begin(), queue.end(), joined);
      });
      if (stopping)
        for (const JobPtr &job : queue)
          if (!joined(job))
            abandonLocked(job);
      if (queue.empty())
        return;
      // Other queues' workers never lock this queue while holding their
      // own lock, so asking them here cannot deadlock.
      auto isReady = [](const JobPtr &job) {
        for (auto &[other, dependency] : job->after)
          if (!other->finished(dependency))
            return false;
        return true;
      };
      auto next = queue.end();
      for (auto it = queue.begin(); it != queue.end(); ++it)
        if (joined(*it) && isReady(*it) &&
            (next == queue.end() || (*it)->priority < (*next)->priority))
          next = it;
      if (next == queue.end())
        next = std::find_if(queue.begin(), queue.end(), joined);
      JobPtr job = *next;
      queue.erase(next);
      job->after.clear();
      lock.unlock();
      std::string error;
      int status = job->work(error);
      job->work = nullptr; // drop captured buffers now
      lock.lock();
      job->status = status;
      job->error = std::move(error);
      job->done = true;
      cv.notify_all();
    }
  });
}

JobQueue::~JobQueue() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
    cv.notify_all();
  }
  worker.join();
}

JobQueue::JobPtr JobQueue::submit(std::function<int(std::string &)> work,
                                  std::pair<int64_t, int64_t> priority,
                                  std::vector<Pending> after, int holds) {
  auto job = std::make_shared<Job>();
  job->work = std::move(work);
  job->priority = priority;
  job->after = std::move(after);
  job->holds = holds;
  std::lock_guard<std::mutex> lock(mu);
  queue.push_back(job);
  cv.notify_all();
  return job;
}

void JobQueue::extend(const JobPtr &job, const std::vector<Pending> &more) {
  std::lock_guard<std::mutex> lock(mu);
  job->after.insert(job->after.end(), more.begin(), more.end());
}

void JobQueue::release(const JobPtr &job) {
  std::lock_guard<std::mutex> lock(mu);
  if (job->holds > 0 && --job->holds == 0)
    cv.notify_all();
}

void JobQueue::abandonLocked(const JobPtr &job) {
  if (job->holds == 0 || job->done)
    return;
  job->holds = 0;
  job->after.clear();
  job->work = [](std::string &error) {
    error = "abandoned: not every replica reached it";
    return int(PIPE_RT_ABORTED);
  };
}

void JobQueue::abandon(const JobPtr &job) {
  std::lock_guard<std::mutex> lock(mu);
  abandonLocked(job);
  cv.notify_all();
}

bool JobQueue::finished(const JobPtr &job) {
  std::lock_guard<std::mutex> lock(mu);
  return job->done;
}

int JobQueue::wait(const JobPtr &job) {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return job->done; });
  return job->status;
}

int pipe_rt::waitFor(const std::vector<JobQueue::Pending> &jobs) {
  int result = PIPE_RT_OK;
  for (const auto &[queue, job] : jobs)
    if (int st = queue->wait(job); st != PIPE_RT_OK && result == PIPE_RT_OK)
      result = st;
  return result;
}
