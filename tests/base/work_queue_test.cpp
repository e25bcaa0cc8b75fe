#include "base/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

namespace vllm {
namespace {

TEST(WorkQueueTest, RunsEveryTaskOffTheCallingThread) {
  std::atomic<int> done{0};
  std::promise<void> all_done;
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> ran_on_caller{false};
  {
    WorkQueue queue("test", 2);
    for (int i = 0; i < 100; ++i) {
      queue.post([&] {
        ran_on_caller = ran_on_caller || std::this_thread::get_id() == caller;
        if (++done == 100) all_done.set_value();
      });
    }
    ASSERT_EQ(all_done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  }
  EXPECT_EQ(done, 100);
  EXPECT_FALSE(ran_on_caller);
}

TEST(WorkQueueTest, DestructionDropsWhatHasNotStarted) {
  std::atomic<int> started{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto queue = std::make_unique<WorkQueue>("test", 1);
  queue->post([&] {
    ++started;
    released.wait();
  });
  for (int i = 0; i < 10; ++i) queue->post([&] { ++started; });
  while (started == 0) std::this_thread::yield();
  std::thread unblock([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release.set_value();
  });
  queue.reset();  // waits for the running task, drops the ten queued
  unblock.join();
  EXPECT_EQ(started, 1);
}

// stop() is what the destructor does, earlier: when it returns, no task runs
// and every task not started is gone (what it owned released on the
// caller's thread), and later posts are dropped.
TEST(WorkQueueTest, StopWaitsForTheRunningTaskAndReleasesTheRest) {
  std::atomic<bool> running_done{false};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  WorkQueue queue("test", 1);
  queue.post([&] {
    ++started;
    released.wait();
    running_done = true;
  });
  auto owned = std::make_shared<int>(0);
  for (int i = 0; i < 10; ++i) queue.post([&started, owned] { ++started; });
  const std::weak_ptr<int> watch = owned;
  owned.reset();
  while (started == 0) std::this_thread::yield();
  std::thread unblock([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release.set_value();
  });
  queue.stop();
  EXPECT_TRUE(running_done);
  EXPECT_TRUE(watch.expired());
  queue.post([&] { ++started; });
  unblock.join();
  EXPECT_EQ(started, 1);
}

}  // namespace
}  // namespace vllm
