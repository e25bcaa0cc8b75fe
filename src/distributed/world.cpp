#include "distributed/world.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/logging.h"

namespace vllm {
namespace {

class SingleRank final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(float*, int64_t) override {}
  void all_gather(const float* data, int64_t n, float* out) override { std::copy_n(data, n, out); }
  void all_reduce_sum_idle(int64_t*, int64_t) override {}
  void all_to_all(const int64_t* data, int64_t n, int64_t* out) override { std::copy_n(data, n, out); }
  void all_to_all(const float* data, const int64_t* send_counts, float* out, const int64_t*) override {
    std::copy_n(data, send_counts[0], out);
  }
  void broadcast(void*, int64_t, int) override {}
  void broadcast_idle(void*, int64_t, int) override {}
  void post_broadcast(const void*, int64_t) override {}
  void send(const float*, int64_t, int) override { VLLM_CHECK(false, "a group of one rank sends to none"); }
  void receive(float*, int64_t, int) override { VLLM_CHECK(false, "a group of one rank receives from none"); }
  void post(std::string, int) override { VLLM_CHECK(false, "a group of one rank posts to none"); }
  bool poll(std::string&, int&) override { return false; }
  void wait_posted() override {}
  CommunicationStats stats() const override { return {}; }
};

int mpi_count(int64_t n) {
  VLLM_CHECK(n >= 0 && n <= INT_MAX, "an MPI message of more than INT_MAX elements");
  return static_cast<int>(n);
}

// A group of ranks: the world, or a part of it split off.
class MpiGroup final : public Communicator {
 public:
  explicit MpiGroup(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(float* data, int64_t n) override {
    const Timed timed(stats_, n * static_cast<int64_t>(sizeof(float)));
    // Gathered, then added in rank order here: MPI_Allreduce leaves the
    // order of the additions to the library, and so the bits to the rank.
    gathered_.resize(static_cast<size_t>(n) * static_cast<size_t>(size_));
    MPI_Allgather(data, mpi_count(n), MPI_FLOAT, gathered_.data(), mpi_count(n), MPI_FLOAT, comm_);
    std::copy_n(gathered_.data(), n, data);
    for (int r = 1; r < size_; ++r) {
      const float* part = gathered_.data() + static_cast<size_t>(r) * static_cast<size_t>(n);
      for (int64_t i = 0; i < n; ++i) data[i] += part[i];
    }
  }

  void all_gather(const float* data, int64_t n, float* out) override {
    const Timed timed(stats_, n * static_cast<int64_t>(sizeof(float)));
    MPI_Allgather(data, mpi_count(n), MPI_FLOAT, out, mpi_count(n), MPI_FLOAT, comm_);
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    const Timed timed(stats_, bytes);
    MPI_Bcast(data, mpi_count(bytes), MPI_BYTE, root, comm_);
  }

  void broadcast_idle(void* data, int64_t bytes, int root) override {
    const Timed timed(stats_, bytes);
    MPI_Request request;
    MPI_Ibcast(data, mpi_count(bytes), MPI_BYTE, root, comm_, &request);
    wait_idle(request, 20000);  // a worker's next step follows its last closely
  }

  void all_reduce_sum_idle(int64_t* data, int64_t n) override {
    const Timed timed(stats_, n * static_cast<int64_t>(sizeof(int64_t)));
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, data, mpi_count(n), MPI_INT64_T, MPI_SUM, comm_, &request);
    // Asleep at once: idle replicas vote every millisecond, a spin each would keep a core busy.
    wait_idle(request, 0);
  }

  void all_to_all(const int64_t* data, int64_t n, int64_t* out) override {
    const Timed timed(stats_, n * size_ * static_cast<int64_t>(sizeof(int64_t)));
    MPI_Alltoall(data, mpi_count(n), MPI_INT64_T, out, mpi_count(n), MPI_INT64_T, comm_);
  }

  void all_to_all(const float* data, const int64_t* send_counts, float* out, const int64_t* recv_counts) override {
    std::vector<int> counts(4 * static_cast<size_t>(size_));
    int* send = counts.data();
    int* send_at = send + size_;
    int* receive = send_at + size_;
    int* receive_at = receive + size_;
    int64_t sent = 0, received = 0;
    for (int r = 0; r < size_; ++r) {
      send[r] = mpi_count(send_counts[r]);
      receive[r] = mpi_count(recv_counts[r]);
      send_at[r] = mpi_count(sent);
      receive_at[r] = mpi_count(received);
      sent += send_counts[r];
      received += recv_counts[r];
    }
    const Timed timed(stats_, sent * static_cast<int64_t>(sizeof(float)));
    MPI_Alltoallv(data, send, send_at, MPI_FLOAT, out, receive, receive_at, MPI_FLOAT, comm_);
  }

  void post_broadcast(const void* data, int64_t bytes) override {
    const Timed timed(stats_, bytes);
    VLLM_CHECK(rank_ == 0, "rank 0 posts the broadcasts");
    Posted& posted = posted_.emplace_back(
        Posted{std::string(static_cast<const char*>(data), static_cast<size_t>(bytes)), MPI_REQUEST_NULL});
    MPI_Ibcast(posted.bytes.data(), mpi_count(bytes), MPI_BYTE, 0, comm_, &posted.request);
    drop_sent();
  }

  void send(const float* data, int64_t n, int to) override {
    const Timed timed(stats_, n * static_cast<int64_t>(sizeof(float)));
    // A copy goes out while the sender moves on: a pipeline stage hands its
    // batch on and starts the next, while the receiver may itself still be
    // sending (logits back to rank 0) -- two blocking sends would wait on
    // each other.
    std::string bytes(reinterpret_cast<const char*>(data), static_cast<size_t>(n) * sizeof(float));
    Posted& posted = posted_.emplace_back(Posted{std::move(bytes), MPI_REQUEST_NULL});
    MPI_Isend(posted.bytes.data(), mpi_count(n), MPI_FLOAT, to, kPointToPointTag, comm_, &posted.request);
    drop_sent();
  }

  void receive(float* data, int64_t n, int from) override {
    const Timed timed(stats_, 0);
    MPI_Recv(data, mpi_count(n), MPI_FLOAT, from, kPointToPointTag, comm_, MPI_STATUS_IGNORE);
  }

  void post(std::string bytes, int to) override {
    stats_.bytes += static_cast<int64_t>(bytes.size());
    // Kept where it is (a list's elements stay put) until the send completes.
    Posted& posted = posted_.emplace_back(Posted{std::move(bytes), MPI_REQUEST_NULL});
    MPI_Isend(posted.bytes.data(), mpi_count(static_cast<int64_t>(posted.bytes.size())), MPI_BYTE, to, kMessageTag,
              comm_, &posted.request);
    drop_sent();
  }

  bool poll(std::string& bytes, int& from) override {
    drop_sent();
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kMessageTag, comm_, &arrived, &status);
    if (!arrived) return false;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    bytes.resize(static_cast<size_t>(count));
    from = status.MPI_SOURCE;
    MPI_Recv(bytes.data(), count, MPI_BYTE, from, kMessageTag, comm_, MPI_STATUS_IGNORE);
    return true;
  }

  CommunicationStats stats() const override { return stats_; }

  void wait_posted() override {
    for (Posted& posted : posted_) MPI_Wait(&posted.request, MPI_STATUS_IGNORE);
    posted_.clear();
  }

 private:
  static constexpr int kPointToPointTag = 1;
  static constexpr int kMessageTag = 2;

  struct Posted {
    std::string bytes;
    MPI_Request request;
  };

  // Polls `spins` times at once, then sleeps between polls, longer the
  // longer the wait, up to a millisecond.
  static void wait_idle(MPI_Request& request, int spins) {
    int done = 0;
    for (int spin = 0; spin < spins && !done; ++spin) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    auto pause = std::chrono::microseconds(20);
    while (!done) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
  }
  void drop_sent() {
    for (auto it = posted_.begin(); it != posted_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? posted_.erase(it) : std::next(it);
    }
  }

  // Counts one collective into the stats, with the time until it goes out of scope.
  class Timed {
   public:
    Timed(CommunicationStats& stats, int64_t bytes) : stats_(stats), start_(now_seconds()) {
      ++stats_.collectives;
      stats_.bytes += bytes;
    }
    ~Timed() { stats_.seconds += now_seconds() - start_; }
    Timed(const Timed&) = delete;
    Timed& operator=(const Timed&) = delete;

   private:
    CommunicationStats& stats_;
    double start_;
  };

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<float> gathered_;
  std::list<Posted> posted_;
  CommunicationStats stats_;
};

std::unique_ptr<Communicator>& world_slot() {
  static std::unique_ptr<Communicator> world;
  return world;
}

// Whether a launcher started this process as a rank of a job: Open MPI's
// mpirun, or a PMIx launcher (srun), says so in the environment.
bool launched_as_rank() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

bool& concurrent_calls_slot() {
  static bool allowed = true;
  return allowed;
}

}  // namespace

Status init_world() {
  std::unique_ptr<Communicator>& world = world_slot();
  VLLM_CHECK(world == nullptr, "init_world called twice");
  if (!launched_as_rank()) {
    world = std::make_unique<SingleRank>();
    return Status::ok();
  }
  // The engine thread (not main's) makes the calls; with data parallelism a
  // replica's message thread too, at the same time as its engine's passes.
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    return internal_error("MPI_Init_thread failed");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return unimplemented(
        "this MPI library does not let a thread other than main's make its calls "
        "(MPI_THREAD_SERIALIZED)");
  }
  concurrent_calls_slot() = provided >= MPI_THREAD_MULTIPLE;
  world = std::make_unique<MpiGroup>(MPI_COMM_WORLD);
  return Status::ok();
}

bool concurrent_calls_allowed() { return concurrent_calls_slot(); }

Communicator& world() {
  std::unique_ptr<Communicator>& world = world_slot();
  if (world == nullptr) world = std::make_unique<SingleRank>();  // a test, or a tool that never calls init_world
  return *world;
}

namespace {

std::map<std::string, std::unique_ptr<Communicator>>& split_groups() {
  static std::map<std::string, std::unique_ptr<Communicator>> groups;
  return groups;
}

// A split of the world into groups of ranks alike in `color`, made once per `key`.
Communicator& split_world(const std::string& key, int color) {
  std::unique_ptr<Communicator>& group = split_groups()[key];
  if (group == nullptr) {
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, color, world().rank(), &comm);
    group = std::make_unique<MpiGroup>(comm);
  }
  return *group;
}

}  // namespace

Communicator& consecutive_ranks(int size) {
  Communicator& all = world();
  VLLM_CHECK(size >= 1 && all.size() % size == 0, "groups of consecutive ranks that divide the world");
  if (size == all.size()) return all;
  return split_world("consecutive " + std::to_string(size), all.rank() / size);
}

namespace {

// The ranks at the same place in each group of `group_size`, as the group `name`.
Communicator& ranks_alike_in_groups(const std::string& name, int group_size) {
  Communicator& all = world();
  VLLM_CHECK(group_size >= 1 && all.size() % group_size == 0, "groups of consecutive ranks that divide the world");
  return split_world(name + " " + std::to_string(group_size), all.rank() % group_size);
}

}  // namespace

Communicator& peer_ranks(int group_size) {
  return group_size == 1 ? world() : ranks_alike_in_groups("peers", group_size);
}

Communicator& expert_ranks(int group_size) {
  return world().size() == 1 ? world() : ranks_alike_in_groups("experts", group_size);
}

int finish_world(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return exit_code;
  if (exit_code != 0) MPI_Abort(MPI_COMM_WORLD, exit_code);
  // Every send has been received by now; MPI wants their requests completed.
  world().wait_posted();
  for (auto& [key, group] : split_groups()) group->wait_posted();
  MPI_Finalize();
  return exit_code;
}

}  // namespace vllm
