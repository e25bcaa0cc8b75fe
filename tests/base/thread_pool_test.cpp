#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace vllm {
namespace {

TEST(ThreadPoolTest, RunCallsEveryWorkerOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> calls(4);
  for (int round = 0; round < 100; ++round) {
    pool.run([&](int w) { calls[static_cast<size_t>(w)].fetch_add(1); });
  }
  for (auto& c : calls) EXPECT_EQ(c.load(), 100);
}

TEST(ThreadPoolTest, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 5, 97, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1) << "n=" << n;
  }
}

TEST(ThreadPoolTest, ParallelForChunksAreWholeGrainsCoveringTheRangeOnce) {
  ThreadPool pool(2);
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  pool.parallel_for(
      100,
      [&](int64_t b, int64_t e) {
        std::lock_guard lock(mutex);
        ranges.emplace_back(b, e);
      },
      8);
  std::sort(ranges.begin(), ranges.end());
  ASSERT_EQ(ranges.size(), 8u);  // 13 grains, four chunks per thread
  int64_t next = 0;
  for (const auto& [b, e] : ranges) {
    EXPECT_EQ(b, next);
    EXPECT_TRUE(e == 100 || e % 8 == 0) << e;
    next = e;
  }
  EXPECT_EQ(next, 100);
}

// A worker that is slow (here: held up) leaves its share to the other.
TEST(ThreadPoolTest, ParallelForLetsAFastThreadTakeMoreChunks) {
  ThreadPool pool(2);
  std::atomic<int> first_chunk_seen{0};
  std::vector<std::thread::id> owner(8);
  std::thread::id slow;
  pool.parallel_for(8, [&](int64_t b, int64_t e) {
    if (first_chunk_seen.fetch_add(1) == 0) {
      slow = std::this_thread::get_id();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    for (int64_t i = b; i < e; ++i) owner[static_cast<size_t>(i)] = std::this_thread::get_id();
  });
  EXPECT_EQ(std::count(owner.begin(), owner.end(), slow), 1);  // the other thread took the other seven
}

TEST(ThreadPoolTest, SingleThreadRunsInline) {
  ThreadPool pool(1);
  int calls = 0;
  pool.parallel_for(10, [&](int64_t b, int64_t e) { calls += static_cast<int>(e - b); });
  EXPECT_EQ(calls, 10);
}

// caller_only() runs each job on the thread that calls it, from any thread
// at once (work inside another pool's job).
TEST(ThreadPoolTest, CallerOnlyRunsOnEachCallingThread) {
  ThreadPool pool(2);
  std::vector<std::thread::id> ran(2);
  pool.run([&](int worker) {
    ThreadPool::caller_only().parallel_for(
        5, [&](int64_t, int64_t) { ran[static_cast<size_t>(worker)] = std::this_thread::get_id(); });
  });
  EXPECT_EQ(ThreadPool::caller_only().num_threads(), 1);
  EXPECT_EQ(ran[0], std::this_thread::get_id());
  EXPECT_NE(ran[1], ran[0]);
  EXPECT_NE(ran[1], std::thread::id());
}

}  // namespace
}  // namespace vllm
