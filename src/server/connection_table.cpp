#include "server/connection_table.h"

namespace vllm::server {

bool ConnectionTable::opened() {
  {
    std::lock_guard lock(mutex_);
    ++num_open_;
    if (num_open_ <= max_connections_) return true;
  }
  return evict_longest_idle();
}

void ConnectionTable::closed(Connection& connection) {
  std::lock_guard lock(mutex_);
  remove_idle(connection);
  --num_open_;
}

void ConnectionTable::set_idle(const std::shared_ptr<Connection>& connection) {
  std::lock_guard lock(mutex_);
  if (connection->idle_) return;
  connection->idle_ = true;
  connection->idle_position_ = idle_.insert(idle_.end(), connection);
}

void ConnectionTable::set_busy(Connection& connection) {
  std::lock_guard lock(mutex_);
  remove_idle(connection);
}

void ConnectionTable::remove_idle(Connection& connection) {
  if (!connection.idle_) return;
  idle_.erase(connection.idle_position_);
  connection.idle_ = false;
}

bool ConnectionTable::evict_longest_idle() {
  std::shared_ptr<Connection> victim;
  {
    std::lock_guard lock(mutex_);
    while (!idle_.empty() && !victim) {
      victim = idle_.front().lock();
      if (victim) {
        remove_idle(*victim);
      } else {
        idle_.pop_front();  // its owner is gone already
      }
    }
  }
  if (!victim) return false;
  victim->evict();
  return true;
}

size_t ConnectionTable::num_open() const {
  std::lock_guard lock(mutex_);
  return num_open_;
}

}  // namespace vllm::server
