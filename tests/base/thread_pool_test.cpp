#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

TEST(ThreadPoolTest, ParallelForRespectsGrain) {
  ThreadPool pool(2);
  std::vector<std::pair<int64_t, int64_t>> ranges(2, {-1, -1});
  pool.parallel_for(
      100,
      [&](int64_t b, int64_t e) {
        ranges[b == 0 ? 0 : 1] = {b, e};
      },
      32);
  using Range = std::pair<int64_t, int64_t>;
  EXPECT_EQ(ranges[0], Range(0, 64));
  EXPECT_EQ(ranges[1], Range(64, 100));
}

TEST(ThreadPoolTest, SingleThreadRunsInline) {
  ThreadPool pool(1);
  int calls = 0;
  pool.parallel_for(10, [&](int64_t b, int64_t e) { calls += static_cast<int>(e - b); });
  EXPECT_EQ(calls, 10);
}

}  // namespace
}  // namespace vllm
