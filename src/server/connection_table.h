// The open connections of an HTTP server, for its cap on them: how many are
// open, and which are idle (no request being answered), longest idle first,
// so that a new connection at the cap can take the place of one that is
// only waiting (a keep-alive connection, or a client sending slowly) and
// never of one whose answer is in progress.  Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>

namespace vllm::server {

class ConnectionTable {
 public:
  // What the table knows of a connection.  evict() is called without the
  // table's lock; it should close the connection if it is still idle.
  class Connection {
   public:
    virtual ~Connection() = default;
    virtual void evict() = 0;

   private:
    friend class ConnectionTable;
    bool idle_ = false;
    std::list<std::weak_ptr<Connection>>::iterator idle_position_;
  };

  explicit ConnectionTable(size_t max_connections) : max_connections_(max_connections) {}

  // A connection was accepted.  True if it may be served: there is room, or
  // the longest-idle connection was asked to give way.  False at the cap
  // with no idle connection: refuse it (503) and call closed() for it.
  bool opened();
  // Once per opened() connection, when its socket is closed.
  void closed(Connection& connection);

  void set_idle(const std::shared_ptr<Connection>& connection);
  void set_busy(Connection& connection);

  // Asks the longest-idle connection to close; false if there is none.
  bool evict_longest_idle();

  size_t num_open() const;

 private:
  void remove_idle(Connection& connection);  // with the lock held

  const size_t max_connections_;
  mutable std::mutex mutex_;
  size_t num_open_ = 0;
  std::list<std::weak_ptr<Connection>> idle_;  // front: idle the longest
};

}  // namespace vllm::server
