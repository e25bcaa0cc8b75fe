#include "engine/data_parallel/data_parallel_engine.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "base/logging.h"
#include "engine/data_parallel/replica_messages.h"

namespace vllm {
namespace {

using namespace data_parallel;

}  // namespace

DataParallelEngine::DataParallelEngine(std::unique_ptr<AsyncEngine> local, Communicator& leaders,
                                       int32_t max_waiting_requests)
    : local_(std::move(local)),
      leaders_(leaders),
      num_replicas_(leaders.size()),
      max_waiting_requests_(max_waiting_requests),
      replica_stats_(static_cast<size_t>(num_replicas_)),
      sent_since_report_(static_cast<size_t>(num_replicas_), 0),
      lora_answers_(static_cast<size_t>(num_replicas_)),
      thread_([this] { run_messages(); }) {
  VLLM_CHECK(leaders.rank() == 0, "the front door of data parallelism runs on the leaders' rank 0");
}

DataParallelEngine::~DataParallelEngine() { shutdown(); }

int DataParallelEngine::choose_replica() {
  // From the replica after the last chosen, so that equally loaded ones take turns.
  int best = -1;
  std::tuple<int64_t, double> best_load;
  for (int i = 0; i < num_replicas_; ++i) {
    const int r = (last_chosen_ + 1 + i) % num_replicas_;
    const EngineCoreStats s = r == 0 ? local_->stats() : replica_stats_[static_cast<size_t>(r)];
    const int64_t waiting = int64_t{s.num_waiting} + (r == 0 ? 0 : sent_since_report_[static_cast<size_t>(r)]);
    const std::tuple<int64_t, double> load{4 * waiting + s.num_running, s.kv_cache_usage()};
    if (best < 0 || load < best_load) {
      best = r;
      best_load = load;
    }
  }
  last_chosen_ = best;
  return best;
}

Result<std::shared_ptr<RequestStream>> DataParallelEngine::add_request(const std::string& request_id,
                                                                       const PromptInput& prompt,
                                                                       const SamplingParams& params) {
  // Every replica is the same engine: what the local one accepts, any would.
  VLLM_ASSIGN_OR_RETURN(ProcessedRequest processed, local_->process_inputs(prompt, params));
  std::shared_ptr<RequestStream> stream;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return unavailable("the engine is shutting down");
    if (max_waiting_requests_ > 0) {
      int64_t num_waiting = local_->stats().num_waiting;
      for (int r = 1; r < num_replicas_; ++r) {
        num_waiting += replica_stats_[static_cast<size_t>(r)].num_waiting + sent_since_report_[static_cast<size_t>(r)];
      }
      if (num_waiting >= max_waiting_requests_) {
        return Status(StatusCode::kResourceExhausted, "the server is busy: " + std::to_string(num_waiting) +
                                                          " requests are waiting (--max-waiting-requests " +
                                                          std::to_string(max_waiting_requests_) + "); retry later");
      }
    }
    if (remote_.count(request_id) != 0 || local_->has_request(request_id)) {
      return invalid_argument("request id '" + request_id + "' is already in use");
    }
    const int replica = choose_replica();
    if (replica == 0) {
      VLLM_ASSIGN_OR_RETURN(stream, local_->add_processed(request_id, std::move(processed)));
    } else {
      stream = std::make_shared<RequestStream>();
      stream->engine_index_ = replica;
      remote_.emplace(request_id, RemoteRequest{replica, stream});
      outbox_.emplace_back(replica, encode(AddRequest{request_id, prompt, params}));
      ++sent_since_report_[static_cast<size_t>(replica)];
    }
  }
  wake_.notify_one();
  return stream;
}

void DataParallelEngine::abort(const std::string& request_id) {
  {
    std::lock_guard lock(mutex_);
    auto it = remote_.find(request_id);
    if (it != remote_.end()) {
      if (stopping_) return;  // its replica aborts it anyway
      outbox_.emplace_back(it->second.replica, encode(AbortRequest{request_id}));
      wake_.notify_one();
      return;
    }
  }
  local_->abort(request_id);
}

std::vector<EngineCoreStats> DataParallelEngine::engine_stats() const {
  std::lock_guard lock(mutex_);
  std::vector<EngineCoreStats> stats = replica_stats_;
  stats[0] = local_->stats();
  return stats;
}

EngineCoreStats DataParallelEngine::stats() const {
  const std::vector<EngineCoreStats> replicas = engine_stats();
  EngineCoreStats sum = replicas[0];
  for (size_t r = 1; r < replicas.size(); ++r) {
    const EngineCoreStats& s = replicas[r];
    sum.num_running += s.num_running;
    sum.num_waiting += s.num_waiting;
    sum.num_blocks += s.num_blocks;
    sum.num_free_blocks += s.num_free_blocks;
    sum.prefix_cache.queries_tokens += s.prefix_cache.queries_tokens;
    sum.prefix_cache.hits_tokens += s.prefix_cache.hits_tokens;
    sum.num_preemptions += s.num_preemptions;
    sum.num_steps += s.num_steps;
    sum.num_scheduled_tokens += s.num_scheduled_tokens;
    if (s.spec_decoding) (sum.spec_decoding ? *sum.spec_decoding : sum.spec_decoding.emplace()) += *s.spec_decoding;
  }
  return sum;
}

Status DataParallelEngine::await_lora_answer(int replica) {
  std::unique_lock lock(mutex_);
  std::optional<Status>& answer = lora_answers_[static_cast<size_t>(replica)];
  lora_answer_.wait(lock, [&] { return answer.has_value() || stopping_; });
  if (!answer) return unavailable("the engine is shutting down");
  Status status = std::move(*answer);
  answer.reset();
  return status;
}

Status DataParallelEngine::load_lora(const LoraModule& module, bool replace) {
  std::lock_guard serial(lora_mutex_);
  VLLM_RETURN_IF_ERROR(local_->load_lora(module, replace));
  for (int r = 1; r < num_replicas_; ++r) {
    post_to(r, encode(LoadLora{module, replace}));
    Status status = await_lora_answer(r);
    if (status.is_ok()) continue;
    // A new adapter comes off the replicas that took it, so that no request
    // naming it lands where it is missing.  (One loaded in place stays.)
    if (!replace) {
      (void)local_->unload_lora(module.name);
      for (int taken = 1; taken < r; ++taken) {
        post_to(taken, encode(UnloadLora{module.name}));
        (void)await_lora_answer(taken);
      }
    }
    return status.with_context("data-parallel replica " + std::to_string(r));
  }
  return Status::ok();
}

Status DataParallelEngine::unload_lora(const std::string& name) {
  std::lock_guard serial(lora_mutex_);
  VLLM_RETURN_IF_ERROR(local_->unload_lora(name));
  for (int r = 1; r < num_replicas_; ++r) {
    post_to(r, encode(UnloadLora{name}));
    VLLM_RETURN_IF_ERROR(await_lora_answer(r).with_context("data-parallel replica " + std::to_string(r)));
  }
  return Status::ok();
}

void DataParallelEngine::post_to(int replica, std::string message) {
  {
    std::lock_guard lock(mutex_);
    outbox_.emplace_back(replica, std::move(message));
  }
  wake_.notify_one();
}

void DataParallelEngine::shutdown() {
  // The local engine first: in lockstep (experts across the replicas) each
  // replica's engine ends only once every one has begun to.
  local_->begin_shutdown();
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      for (int r = 1; r < num_replicas_; ++r) outbox_.emplace_back(r, encode(Shutdown{}));
    }
  }
  wake_.notify_one();
  lora_answer_.notify_all();
  if (thread_.joinable()) thread_.join();
  local_->shutdown();
  // A replica says its last only after every request's final output; none should be left.
  std::unordered_map<std::string, RemoteRequest> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(remote_);
  }
  for (auto& [id, request] : left) request.stream->push(RequestOutput::aborted(id));
}

bool DataParallelEngine::receive(int replica, const std::string& bytes) {
  ReplicaMessage message = decode(bytes);
  if (auto* outputs = std::get_if<Outputs>(&message)) {
    for (RequestOutput& out : outputs->outputs) {
      std::shared_ptr<RequestStream> stream;
      {
        std::lock_guard lock(mutex_);
        auto it = remote_.find(out.request_id);
        if (it == remote_.end()) continue;
        stream = it->second.stream;
        if (out.finished) remote_.erase(it);
      }
      stream->push(std::move(out));
    }
  } else if (auto* stats = std::get_if<Stats>(&message)) {
    std::lock_guard lock(mutex_);
    replica_stats_[static_cast<size_t>(replica)] = std::move(stats->stats);
    sent_since_report_[static_cast<size_t>(replica)] = 0;
  } else if (auto* done = std::get_if<LoraDone>(&message)) {
    {
      std::lock_guard lock(mutex_);
      lora_answers_[static_cast<size_t>(replica)] = std::move(done->status);
    }
    lora_answer_.notify_all();
  } else {
    VLLM_CHECK(std::holds_alternative<Stopped>(message), "a replica sent a message meant for replicas");
    return false;
  }
  return true;
}

void DataParallelEngine::run_messages() {
  pthread_setname_np(pthread_self(), "vllm-dp-front");
  // Waits between polls grow while nothing happens, up to a millisecond:
  // messages come closely while requests run, and the thread should not
  // spin a core while the server is idle.
  auto pause = std::chrono::microseconds(10);
  int num_stopped = 0;  // replicas that have said their last
  while (true) {
    std::deque<std::pair<int, std::string>> outbox;
    bool stopping = false;
    {
      std::lock_guard lock(mutex_);
      outbox.swap(outbox_);
      stopping = stopping_;
    }
    for (auto& [replica, bytes] : outbox) leaders_.post(std::move(bytes), replica);
    bool busy = !outbox.empty();
    std::string bytes;
    int from = 0;
    while (leaders_.poll(bytes, from)) {
      busy = true;
      if (!receive(from, bytes)) ++num_stopped;
    }
    if (stopping && num_stopped == num_replicas_ - 1) break;
    pause = busy ? std::chrono::microseconds(10) : std::min(pause * 2, std::chrono::microseconds(1000));
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, pause, [&] { return !outbox_.empty() || stopping_ != stopping; });
  }
  leaders_.wait_posted();
}

}  // namespace vllm
