#include "base/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <string>

namespace vllm {
namespace {

constexpr int kSpinIterations = 20000;

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

int ThreadPool::default_num_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& ThreadPool::caller_only() {
  static ThreadPool pool(1);
  return pool;
}

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  cpu_set_t allowed;
  if (num_threads_ > 1 && sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) == num_threads_) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) cpus_.push_back(cpu);
    }
  }
  threads_.reserve(num_threads_ - 1);
  for (int i = 1; i < num_threads_; ++i) {
    threads_.emplace_back([this, i] {
      const std::string name = "vllm-worker-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      pin_to_cpu(i);
      worker_loop(i);
    });
  }
}

void ThreadPool::pin_to_cpu(int worker) const {
  if (cpus_.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus_[static_cast<size_t>(worker)], &one);
  pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  epoch_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker_loop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t now = epoch_.load(std::memory_order_acquire);
    for (int spin = 0; now == seen && spin < kSpinIterations; ++spin) {
      cpu_relax();
      now = epoch_.load(std::memory_order_acquire);
    }
    while (now == seen) {
      epoch_.wait(seen, std::memory_order_acquire);
      now = epoch_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stopping_.load(std::memory_order_acquire)) return;
    (*job_)(worker);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::run(const std::function<void(int)>& job) {
  if (num_threads_ == 1) {
    job(0);
    return;
  }
  job_ = &job;
  pending_.store(num_threads_ - 1, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  epoch_.notify_all();
  job(0);
  int left = pending_.load(std::memory_order_acquire);
  for (int spin = 0; left != 0 && spin < kSpinIterations; ++spin) {
    cpu_relax();
    left = pending_.load(std::memory_order_acquire);
  }
  while (left != 0) {
    pending_.wait(left, std::memory_order_acquire);
    left = pending_.load(std::memory_order_acquire);
  }
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t num_grains = (n + grain - 1) / grain;
  const int64_t workers = std::min<int64_t>(num_threads_, num_grains);
  if (workers <= 1) {
    fn(0, n);
    return;
  }
  constexpr int64_t kChunksPerThread = 4;
  const int64_t chunks = std::min(num_grains, kChunksPerThread * workers);
  std::atomic<int64_t> next{0};
  run([&](int) {
    for (int64_t c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
         c = next.fetch_add(1, std::memory_order_relaxed)) {
      // Chunk c: grains [c * num_grains / chunks, (c + 1) * num_grains / chunks).
      const int64_t begin = c * num_grains / chunks * grain;
      const int64_t end = std::min(n, (c + 1) * num_grains / chunks * grain);
      if (begin < end) fn(begin, end);
    }
  });
}

}  // namespace vllm
