#include "base/work_queue.h"

#include <pthread.h>

namespace vllm {

WorkQueue::WorkQueue(const std::string& name, int num_threads) {
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this, thread_name = name + "-" + std::to_string(i)] {
      pthread_setname_np(pthread_self(), thread_name.substr(0, 15).c_str());  // the kernel keeps 15 characters
      run();
    });
  }
}

WorkQueue::~WorkQueue() { stop(); }

void WorkQueue::stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    dropped.swap(tasks_);  // destroyed outside the lock: a task may own anything
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WorkQueue::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
}

void WorkQueue::run() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace vllm
