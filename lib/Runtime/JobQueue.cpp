//===- JobQueue.cpp - One-thread FIFO of asynchronous jobs ----------------===//

#include "JobQueue.h"

using namespace pipe_rt;

JobQueue::JobQueue() {
  worker = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
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
        if (isReady(*it) &&
            (next == queue.end() || (*it)->priority < (*next)->priority))
          next = it;
      if (next == queue.end())
        next = queue.begin();
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
                                  std::vector<Pending> after) {
  auto job = std::make_shared<Job>();
  job->work = std::move(work);
  job->priority = priority;
  job->after = std::move(after);
  std::lock_guard<std::mutex> lock(mu);
  queue.push_back(job);
  cv.notify_all();
  return job;
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
