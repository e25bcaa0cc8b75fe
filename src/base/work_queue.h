// Named threads that run posted tasks in the order they came, for work that
// must not run where it was asked for: request parsing, chat templates and
// tokenisation, which would otherwise hold up an HTTP I/O thread (and every
// connection it serves) for as long as the largest request takes.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vllm {

class WorkQueue {
 public:
  // Threads are named `name`-0, `name`-1, ...
  WorkQueue(const std::string& name, int num_threads);
  // stop().
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void post(std::function<void()> task);
  // Drops the tasks not yet started (destroyed here, on the caller's
  // thread), waits for the running ones; later posts are dropped.
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vllm
