#include "server/connection_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace vllm::server {
namespace {

struct FakeConnection : ConnectionTable::Connection {
  int evictions = 0;
  void evict() override { ++evictions; }
};

TEST(ConnectionTableTest, AtTheCapTheLongestIdleGivesWayAndBusyOnesNever) {
  ConnectionTable table(2);
  auto a = std::make_shared<FakeConnection>(), b = std::make_shared<FakeConnection>();
  ASSERT_TRUE(table.opened());
  ASSERT_TRUE(table.opened());
  table.set_idle(a);
  table.set_idle(b);
  table.set_busy(*a);           // a is being answered now
  EXPECT_TRUE(table.opened());  // over the cap: b, the only idle one, is asked to close
  EXPECT_EQ(a->evictions, 0);
  EXPECT_EQ(b->evictions, 1);
  table.closed(*b);
  EXPECT_EQ(table.num_open(), 2u);
  EXPECT_FALSE(table.opened());  // nothing idle: refused (the caller answers 503 and closes it)
  FakeConnection refused;
  table.closed(refused);
  table.closed(*a);
  EXPECT_EQ(table.num_open(), 1u);
}

TEST(ConnectionTableTest, EvictsInTheOrderTheyBecameIdle) {
  ConnectionTable table(3);
  std::vector<std::shared_ptr<FakeConnection>> c;
  for (int i = 0; i < 3; ++i) {
    c.push_back(std::make_shared<FakeConnection>());
    ASSERT_TRUE(table.opened());
  }
  table.set_idle(c[1]);
  table.set_idle(c[0]);
  table.set_idle(c[2]);
  table.set_idle(c[1]);  // already idle: keeps its place
  ASSERT_TRUE(table.evict_longest_idle());
  EXPECT_EQ(c[1]->evictions, 1);
  ASSERT_TRUE(table.evict_longest_idle());
  EXPECT_EQ(c[0]->evictions, 1);
  c[2].reset();  // gone without a word: skipped
  EXPECT_FALSE(table.evict_longest_idle());
}

}  // namespace
}  // namespace vllm::server
