#include "engine/async_engine.h"

#include <pthread.h>

#include <chrono>

namespace vllm {

bool RequestStream::next(RequestOutput& out) {
  std::unique_lock lock(mutex_);
  if (final_read_) return false;
  ready_.wait(lock, [&] { return !queue_.empty(); });
  out = std::move(queue_.front());
  queue_.pop_front();
  final_read_ = out.finished;
  return true;
}

bool RequestStream::try_next(RequestOutput& out) {
  std::lock_guard lock(mutex_);
  if (queue_.empty()) return false;
  out = std::move(queue_.front());
  queue_.pop_front();
  final_read_ = out.finished;
  return true;
}

void RequestStream::set_listener(std::function<void()> listener) {
  bool waiting = false;
  {
    std::lock_guard lock(mutex_);
    listener_ = listener;
    waiting = !queue_.empty();
  }
  if (waiting && listener) listener();
}

void RequestStream::push(RequestOutput out) {
  std::function<void()> listener;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(out));
    listener = listener_;
  }
  ready_.notify_one();
  if (listener) listener();
}

AsyncEngine::AsyncEngine(std::unique_ptr<LLMEngine> engine, int32_t max_waiting_requests, ExpertExchange* lockstep)
    : engine_(std::move(engine)),
      max_waiting_requests_(max_waiting_requests),
      lockstep_(lockstep),
      stats_(engine_->stats()),
      thread_([this] { run_engine_loop(); }) {}

AsyncEngine::~AsyncEngine() { shutdown(); }

void AsyncEngine::begin_shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
}

void AsyncEngine::shutdown() {
  begin_shutdown();
  if (thread_.joinable()) thread_.join();
}

Result<std::shared_ptr<RequestStream>> AsyncEngine::add_request(const std::string& request_id,
                                                                const PromptInput& prompt,
                                                                const SamplingParams& params) {
  VLLM_ASSIGN_OR_RETURN(ProcessedRequest processed, process_inputs(prompt, params));
  return add_processed(request_id, std::move(processed));
}

Result<ProcessedRequest> AsyncEngine::process_inputs(const PromptInput& prompt, const SamplingParams& params) const {
  // On the caller's thread: it keeps the engine thread free for steps.
  return engine_->process_inputs(prompt, params);
}

Result<std::shared_ptr<RequestStream>> AsyncEngine::add_processed(const std::string& request_id,
                                                                  ProcessedRequest request) {
  auto stream = std::make_shared<RequestStream>();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return unavailable("the engine is shutting down");
    const int32_t num_waiting = stats_.num_waiting + num_adds_in_inbox_;
    if (max_waiting_requests_ > 0 && num_waiting >= max_waiting_requests_) {
      return Status(StatusCode::kResourceExhausted, "the server is busy: " + std::to_string(num_waiting) +
                                                        " requests are waiting (--max-waiting-requests " +
                                                        std::to_string(max_waiting_requests_) + "); retry later");
    }
    if (!streams_.emplace(request_id, stream).second) {
      return invalid_argument("request id '" + request_id + "' is already in use");
    }
    inbox_.push_back(AddCommand{request_id, std::move(request)});
    ++num_adds_in_inbox_;
  }
  wake_.notify_one();
  return stream;
}

bool AsyncEngine::has_request(const std::string& request_id) const {
  std::lock_guard lock(mutex_);
  return streams_.count(request_id) != 0;
}

void AsyncEngine::abort(const std::string& request_id) {
  {
    std::lock_guard lock(mutex_);
    inbox_.push_back(AbortCommand{request_id});
  }
  wake_.notify_one();
}

EngineCoreStats AsyncEngine::stats() const {
  std::lock_guard lock(mutex_);
  EngineCoreStats stats = stats_;
  stats.num_waiting += num_adds_in_inbox_;
  return stats;
}

void AsyncEngine::deliver(RequestOutput out) {
  std::shared_ptr<RequestStream> stream;
  {
    std::lock_guard lock(mutex_);
    auto it = streams_.find(out.request_id);
    if (it == streams_.end()) return;
    stream = it->second;
    if (out.finished) streams_.erase(it);
  }
  stream->push(std::move(out));
}

void AsyncEngine::apply(Command& command) {
  if (auto* add = std::get_if<AddCommand>(&command)) {
    const Status status = engine_->add_request(add->request_id, std::move(add->request));
    // Checked before it was posted; only a changed engine could refuse it now.
    if (!status.is_ok()) deliver(RequestOutput::aborted(add->request_id));
  } else if (auto* abort = std::get_if<AbortCommand>(&command)) {
    if (std::optional<RequestOutput> out = engine_->abort_request(abort->request_id)) deliver(std::move(*out));
  }
}

void AsyncEngine::run_engine_loop() {
  pthread_setname_np(pthread_self(), "vllm-engine");
  bool all_idle = false;  // in lockstep: no replica stepped last turn
  while (true) {
    std::deque<Command> commands;
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      auto ready = [&] { return stopping_ || !inbox_.empty() || engine_->has_unfinished_requests(); };
      // In lockstep an engine votes every turn, even while all are idle
      // (then once a millisecond at most; asleep while the others vote).
      if (lockstep_ == nullptr) {
        wake_.wait(lock, ready);
      } else if (all_idle) {
        wake_.wait_for(lock, std::chrono::milliseconds(1), ready);
      }
      commands.swap(inbox_);
      stopping = stopping_;
    }
    int32_t num_adds = 0;
    for (Command& c : commands) {
      num_adds += std::holds_alternative<AddCommand>(c);
      apply(c);
    }
    {
      // The adds are the core's waiting requests now.
      std::lock_guard lock(mutex_);
      num_adds_in_inbox_ -= num_adds;
      stats_ = engine_->stats();
    }
    if (lockstep_ != nullptr) {
      const std::optional<bool> stepped = lockstep_turn(stopping);
      if (!stepped) break;
      all_idle = !*stepped;
      continue;
    }
    if (stopping) break;
    for (RequestOutput& out : engine_->step()) deliver(std::move(out));
    const EngineCoreStats stats = engine_->stats();
    std::lock_guard lock(mutex_);
    stats_ = stats;
  }
  // Shutting down: every unfinished request ends with "abort".
  std::vector<std::string> unfinished;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, stream] : streams_) unfinished.push_back(id);
  }
  for (const std::string& id : unfinished) {
    std::optional<RequestOutput> out = engine_->abort_request(id);
    if (!out) out = RequestOutput::aborted(id);  // posted but never added
    deliver(std::move(*out));
  }
}

std::optional<bool> AsyncEngine::lockstep_turn(bool stopping) {
  // A stopping engine steps no more (its requests are aborted after the
  // loop) but answers the others' exchanges until every one stops.
  const bool busy = !stopping && engine_->has_unfinished_requests();
  const ExpertExchange::Vote vote = lockstep_->vote(busy, stopping);
  if (vote.all_stopping) return std::nullopt;
  if (!vote.any_busy) return false;
  if (busy) {
    for (RequestOutput& out : engine_->step()) deliver(std::move(out));
  }
  lockstep_->end_step();
  const EngineCoreStats stats = engine_->stats();
  std::lock_guard lock(mutex_);
  stats_ = stats;
  return true;
}

// The registry is thread-safe: the engine thread is not involved.
Status AsyncEngine::load_lora(const LoraModule& module, bool replace) {
  if (engine_->loras() == nullptr) return invalid_argument("LoRA is off (--enable-lora)");
  return engine_->loras()->add(module, replace);
}

Status AsyncEngine::unload_lora(const std::string& name) {
  if (engine_->loras() == nullptr) return invalid_argument("LoRA is off (--enable-lora)");
  return engine_->loras()->remove(name);
}

std::vector<LoraModule> AsyncEngine::lora_modules() const {
  return engine_->loras() != nullptr ? engine_->loras()->modules() : std::vector<LoraModule>{};
}

}  // namespace vllm
