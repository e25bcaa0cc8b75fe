// A fixed pool of worker threads for kernels.
//
// The calling thread is worker 0, so a pool of N threads starts N-1 others.
// run() hands every worker the same job with its own index and returns when
// all have finished; the split of work is static (worker i always gets the
// same range for the same size), which keeps results independent of timing.
// Workers spin briefly before sleeping so that the many small ops of a decode
// step do not each pay a futex wake-up.  A pool with one thread per CPU the
// process may use pins worker i (i >= 1) to the i-th of those CPUs, so that
// its cache stays warm and the workers never share a core; the caller stays
// free (pinning it would bind every thread it creates later), and the
// scheduler puts it on the CPU left over.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace vllm {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls job(worker_index) once on each worker; blocks until all return.
  // Not re-entrant: a job must not call run() on the same pool.
  void run(const std::function<void(int worker)>& job);

  // Splits [0, n) into contiguous chunks, a few per thread, which the
  // threads take in turn as each finishes its last: on a shared machine a
  // thread that runs slower for a while then does less, instead of keeping
  // the others waiting.  Calls fn(begin, end) once per chunk; chunks are
  // multiples of `grain` except the last.  Which thread runs a chunk is not
  // fixed, so fn's result must not depend on it.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn, int64_t grain = 1);

  // A pool of one thread, the caller: it runs every job where it is called
  // and keeps no state, so any thread may use it at once (work done inside
  // another pool's job, which must not fork again).
  static ThreadPool& caller_only();

  // The default size: one thread per CPU the process may run on.
  static int default_num_threads();

 private:
  void worker_loop(int worker);
  void pin_to_cpu(int worker) const;

  int num_threads_;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
  std::vector<int> cpus_;  // the CPU of each thread when pinned; empty: not pinned
};

}  // namespace vllm
