// How the ranks of a distributed job (one process each, started by mpirun)
// exchange data: the collectives that tensor parallelism's layers and the
// workers' step loop need.  Every rank of the group must make the same calls
// in the same order; a call blocks until the group has made it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace vllm {

// What this rank's collectives have cost since the process started: how
// many, the bytes it put in (its own share of each), and the wall time spent
// in them (waiting for the slowest rank included).
struct CommunicationStats {
  int64_t collectives = 0;
  int64_t bytes = 0;
  double seconds = 0;

  CommunicationStats operator-(const CommunicationStats& o) const {
    return {collectives - o.collectives, bytes - o.bytes, seconds - o.seconds};
  }
  CommunicationStats& operator+=(const CommunicationStats& o) {
    collectives += o.collectives;
    bytes += o.bytes;
    seconds += o.seconds;
    return *this;
  }
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // data[i] becomes the sum of every rank's data[i], added in rank order, so
  // that every rank holds the same bits (and a row's sum never depends on
  // what else the buffer holds: batch invariance).
  virtual void all_reduce_sum(float* data, int64_t n) = 0;
  // out[size() * n]: each rank's data[n], in rank order.
  virtual void all_gather(const float* data, int64_t n, float* out) = 0;
  // The same over counts and flags, for a rank that may wait long for the
  // others (an idle data-parallel replica): it sleeps between polls.
  virtual void all_reduce_sum_idle(int64_t* data, int64_t n) = 0;
  // n values for each rank: data[j * n, (j + 1) * n) goes to rank j, and
  // out[i * n, (i + 1) * n) comes from rank i.
  virtual void all_to_all(const int64_t* data, int64_t n, int64_t* out) = 0;
  // Varying lengths (expert parallelism's tokens): send_counts[j] floats to
  // rank j, taken from `data` in rank order; recv_counts[i] floats from rank
  // i, put in `out` in rank order.
  virtual void all_to_all(const float* data, const int64_t* send_counts, float* out, const int64_t* recv_counts) = 0;
  // Rank `root`'s bytes to every rank.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  // The same, for a rank that may wait long for the root (a worker between
  // steps while the server is idle): it sleeps between polls instead of
  // spinning a core.  (A nonblocking broadcast: it matches post_broadcast,
  // not broadcast.)
  virtual void broadcast_idle(void* data, int64_t bytes, int root) = 0;
  // Rank 0's side of a broadcast that the others receive with
  // broadcast_idle(): it returns at once, the bytes copied and sent meanwhile.
  virtual void post_broadcast(const void* data, int64_t bytes) = 0;
  // Point to point, between two ranks of the group (a pipeline's stages).
  // send() returns at once: the data is copied and goes out meanwhile.
  virtual void send(const float* data, int64_t n, int to) = 0;
  virtual void receive(float* data, int64_t n, int from) = 0;

  // Messages of any length between two ranks that neither side waits for
  // (data-parallel replicas' requests and outputs): post() returns at once
  // and keeps the bytes until they have gone; poll() returns a message that
  // has arrived from any rank, if one has.  Both move posted messages on;
  // a rank's messages to another arrive in the order posted.  One thread of
  // a rank uses them.
  virtual void post(std::string bytes, int to) = 0;
  virtual bool poll(std::string& bytes, int& from) = 0;
  // Returns once every posted message and sent buffer has gone (before the ranks part).
  virtual void wait_posted() = 0;

  virtual CommunicationStats stats() const = 0;
};

}  // namespace vllm
