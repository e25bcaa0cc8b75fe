#include "engine/data_parallel/replica_server.h"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/data_parallel/replica_messages.h"

namespace vllm {
namespace {

using namespace data_parallel;

constexpr int kFront = 0;  // the leaders' rank that runs the DataParallelEngine

// The requests this replica runs, and which of them have outputs waiting:
// the engine thread marks them (a stream's listener), the replica's loop reads them.
class RunningRequests {
 public:
  void add(const std::string& request_id, std::shared_ptr<RequestStream> stream) {
    streams_[request_id] = stream;
    stream->set_listener([this, request_id] {
      {
        std::lock_guard lock(mutex_);
        ready_.push_back(request_id);
      }
      wake_.notify_one();
    });
  }

  // Every output waiting, in the order the engine produced them per request.
  std::vector<RequestOutput> take_outputs() {
    std::vector<std::string> ready;
    {
      std::lock_guard lock(mutex_);
      ready.swap(ready_);
    }
    std::vector<RequestOutput> outputs;
    for (const std::string& id : ready) {
      auto it = streams_.find(id);
      if (it == streams_.end()) continue;  // read already, on an earlier mark
      RequestOutput out;
      bool finished = false;
      while (!finished && it->second->try_next(out)) {
        finished = out.finished;
        outputs.push_back(std::move(out));
      }
      if (finished) streams_.erase(it);
    }
    return outputs;
  }

  // Waits up to `pause` for an output.
  void wait(std::chrono::microseconds pause) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, pause, [&] { return !ready_.empty(); });
  }

  bool empty() const { return streams_.empty(); }

 private:
  std::unordered_map<std::string, std::shared_ptr<RequestStream>> streams_;  // the loop's only
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::string> ready_;
};

// What rank 0 balances by changed since it was last sent.
bool load_changed(const EngineCoreStats& a, const EngineCoreStats& b) {
  return a.num_running != b.num_running || a.num_waiting != b.num_waiting || a.num_free_blocks != b.num_free_blocks ||
         a.num_steps != b.num_steps;
}

}  // namespace

Status serve_replica(AsyncEngine& engine, Communicator& leaders) {
  pthread_setname_np(pthread_self(), "vllm-dp-replica");
  // mpirun passes a SIGTERM or SIGINT to every rank; rank 0 then ends the
  // replicas through their messages.
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  RunningRequests running;
  EngineCoreStats reported = engine.stats();
  leaders.post(encode(Stats{reported}), kFront);
  bool stopping = false;
  auto pause = std::chrono::microseconds(10);
  while (true) {
    bool busy = false;
    std::string bytes;
    int from = 0;
    while (!stopping && leaders.poll(bytes, from)) {
      busy = true;
      ReplicaMessage message = decode(bytes);
      if (auto* add = std::get_if<AddRequest>(&message)) {
        Result<std::shared_ptr<RequestStream>> stream = engine.add_request(add->request_id, add->prompt, add->params);
        if (stream.is_ok()) {
          running.add(add->request_id, std::move(*stream));
        } else {
          // Rank 0 checked it on an engine like this one; only a full queue could refuse it.
          leaders.post(encode(Outputs{{RequestOutput::aborted(add->request_id)}}), kFront);
        }
      } else if (auto* abort = std::get_if<AbortRequest>(&message)) {
        engine.abort(abort->request_id);
      } else if (auto* load = std::get_if<LoadLora>(&message)) {
        leaders.post(encode(LoraDone{engine.load_lora(load->module, load->replace)}), kFront);
      } else if (auto* unload = std::get_if<UnloadLora>(&message)) {
        leaders.post(encode(LoraDone{engine.unload_lora(unload->name)}), kFront);
      } else if (std::holds_alternative<Shutdown>(message)) {
        // Every unfinished request's stream ends with "abort", which the loop sends on.
        engine.shutdown();
        stopping = true;
      }
    }
    if (std::vector<RequestOutput> outputs = running.take_outputs(); !outputs.empty()) {
      busy = true;
      leaders.post(encode(Outputs{std::move(outputs)}), kFront);
    }
    if (const EngineCoreStats stats = engine.stats(); load_changed(stats, reported)) {
      reported = stats;
      leaders.post(encode(Stats{stats}), kFront);
    }
    if (stopping && running.empty()) break;
    pause = busy ? std::chrono::microseconds(10) : std::min(pause * 2, std::chrono::microseconds(1000));
    running.wait(pause);
  }
  leaders.post(encode(Stopped{}), kFront);
  leaders.wait_posted();
  return Status::ok();
}

}  // namespace vllm
