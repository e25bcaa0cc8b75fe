#include "engine/engine_core.h"

#include <algorithm>
#include <unordered_set>

#include "base/clock.h"
#include "base/logging.h"

namespace vllm {
namespace {

Status check_ids_in_vocab(const char* field, const std::vector<int32_t>& ids, int64_t vocab) {
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab) {
      return invalid_argument(std::string(field) + ": token id " + std::to_string(id) +
                              " is outside the vocabulary [0, " + std::to_string(vocab) + ")")
          .with_param(field);
    }
  }
  return Status::ok();
}

// The draft of speculative decoding's draft_model: it must share the target's vocabulary.
Result<std::unique_ptr<Model>> load_draft_model(const SpeculativeConfig& spec, const ModelConfig& target) {
  Result<std::unique_ptr<Model>> draft = load_model(spec.model);
  if (!draft.is_ok()) return invalid_argument("the draft model: " + draft.status().message());
  const int64_t vocab = (*draft)->config().vocab_size;
  if (vocab != target.vocab_size) {
    return invalid_argument("the draft model's vocabulary (" + std::to_string(vocab) +
                            " tokens) differs from the target model's (" + std::to_string(target.vocab_size) + ")");
  }
  return draft;
}

// What runs the guesses of a proposer with a model: a draft model, or an EAGLE head over the target.
Result<std::unique_ptr<Model>> load_proposer_model(const SpeculativeConfig& spec, const Model& target) {
  if (spec.method == SpeculativeMethod::kDraftModel) return load_draft_model(spec, target.config());
  Result<std::unique_ptr<Model>> head = spec.method == SpeculativeMethod::kEagle3 ? load_eagle3_head(spec.model, target)
                                                                                  : load_eagle_head(spec.model, target);
  if (!head.is_ok()) return invalid_argument("the EAGLE head: " + head.status().message());
  return head;
}

// The width of the target's hidden states an EAGLE head reads per token (0 for other proposers).
int64_t target_hidden_width(const Model& target, const Model* draft) {
  const std::optional<HiddenStateTap> tap = draft ? draft->target_hidden_states() : std::nullopt;
  return tap ? tap->width(target.config().hidden_size) : 0;
}

}  // namespace

Result<std::unique_ptr<EngineCore>> EngineCore::create(Model& model, const EngineConfig& config) {
  if (config.lora && model.lora_targets().empty()) {
    return unimplemented("--enable-lora: this model (" + model.config().architecture + ") takes no LoRA adapters");
  }
  std::unique_ptr<Model> draft;
  if (config.speculative && config.speculative->runs_a_model()) {
    VLLM_ASSIGN_OR_RETURN(draft, load_proposer_model(*config.speculative, model));
  }
  VLLM_ASSIGN_OR_RETURN(ResolvedEngineConfig resolved,
                        resolve_engine_config(config, model.config(), model.kv_cache_spec(),
                                              draft ? draft->kv_cache_spec() : std::vector<LayerKVSpec>{}));
  VLLM_LOG(Debug) << "KV cache: " << resolved.num_blocks << " blocks of " << resolved.kv_shape.block_size << " tokens ("
                  << (static_cast<double>(resolved.num_blocks) *
                      static_cast<double>(resolved.kv_shape.bytes_per_block() +
                                          resolved.draft_kv_shape.bytes_per_block()) /
                      1048576.0)
                  << " MiB); max_model_len " << resolved.config.scheduler.max_model_len << ", max_num_seqs "
                  << resolved.config.scheduler.max_num_seqs << ", max_num_batched_tokens "
                  << resolved.config.scheduler.max_num_batched_tokens;
  if (resolved.kv_shape.dtype == DType::kF8E4M3) {
    const auto& layers = resolved.kv_shape.layers;
    const auto unscaled =
        std::count_if(layers.begin(), layers.end(), [](const LayerKVSpec& l) { return !l.checkpoint_kv_scales; });
    if (unscaled > 0) {
      VLLM_LOG(Warning) << "FP8 KV cache: the checkpoint gives no k_scale / v_scale for " << unscaled << " of "
                        << layers.size() << " attention layers, which use 1 (keys and values beyond +-448 saturate)";
    }
  }
  return std::unique_ptr<EngineCore>(new EngineCore(model, resolved, std::move(draft)));
}

EngineCore::EngineCore(Model& model, const ResolvedEngineConfig& config, std::unique_ptr<Model> draft_model)
    : model_(model),
      config_(config),
      eos_token_ids_(model.config().eos_token_ids.begin(), model.config().eos_token_ids.end()),
      pool_(config.config.num_threads),
      kv_cache_(config.num_blocks, config.kv_shape.block_size, config.config.cache.enable_prefix_caching,
                /*recompute_last_hit_block=*/draft_model && draft_model->target_hidden_states().has_value()),
      scheduler_(config.config.scheduler, kv_cache_, eos_token_ids_),
      runner_(model, pool_, config.kv_shape, config.num_blocks, config.config.cache.resident,
              draft_model ? draft_model->target_hidden_states() : std::nullopt, eos_token_ids_,
              config.config.scheduler.max_loras),
      draft_model_(std::move(draft_model)),
      target_hidden_width_(target_hidden_width(model, draft_model_.get())),
      proposer_(
          config.config.speculative
              ? make_proposer(*config.config.speculative,
                              DraftModelResources{draft_model_.get(), &pool_, config.draft_kv_shape, config.num_blocks,
                                                  config.config.cache.resident, target_hidden_width_})
              : nullptr),
      max_steps_in_flight_(proposer_ ? 1 : runner_.max_steps_in_flight()) {}

Status EngineCore::check_request(const std::vector<int32_t>& prompt, const SamplingParams& params) const {
  VLLM_RETURN_IF_ERROR(params.validate());
  if (prompt.empty()) return invalid_argument("the prompt is empty").with_param("prompt");
  const int64_t vocab = model_.config().vocab_size;
  VLLM_RETURN_IF_ERROR(check_ids_in_vocab("prompt", prompt, vocab));
  VLLM_RETURN_IF_ERROR(check_ids_in_vocab("stop_token_ids", params.stop_token_ids, vocab));
  if (params.allowed_token_ids) {
    VLLM_RETURN_IF_ERROR(check_ids_in_vocab("allowed_token_ids", *params.allowed_token_ids, vocab));
  }
  for (const auto& [id, bias] : params.logit_bias) {
    VLLM_RETURN_IF_ERROR(check_ids_in_vocab("logit_bias", {id}, vocab));
  }
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t max_len = config_.config.scheduler.max_model_len;
  if (prompt_len >= max_len) {
    return invalid_argument("the maximum context length is " + std::to_string(max_len) + " tokens, the prompt has " +
                            std::to_string(prompt_len) + " tokens")
        .with_param("input_tokens");
  }
  if (params.max_tokens > max_len - prompt_len) {  // not prompt_len + max_tokens: that may overflow
    return invalid_argument("the prompt (" + std::to_string(prompt_len) + " tokens) plus max_tokens (" +
                            std::to_string(params.max_tokens) + ") exceeds the maximum context length of " +
                            std::to_string(max_len) + " tokens")
        .with_param("max_tokens");
  }
  // The last generated token is never fed back, so it needs no slot.
  const int64_t block_size = config_.kv_shape.block_size;
  const int64_t blocks_needed = (prompt_len + params.max_tokens - 1 + block_size - 1) / block_size;
  if (blocks_needed > config_.num_blocks) {
    return invalid_argument("the prompt (" + std::to_string(prompt_len) + " tokens) plus max_tokens (" +
                            std::to_string(params.max_tokens) + ") needs " + std::to_string(blocks_needed) +
                            " KV blocks, more than the whole KV cache holds (" + std::to_string(config_.num_blocks) +
                            " blocks of " + std::to_string(block_size) + " tokens)")
        .with_param("max_tokens");
  }
  return Status::ok();
}

Status EngineCore::add_request(EngineCoreRequest request) {
  VLLM_RETURN_IF_ERROR(check_request(request.prompt_token_ids, request.params));
  if (scheduler_.find_request(request.request_id) != nullptr) {
    return invalid_argument("request id " + std::to_string(request.request_id) + " is already in use");
  }
  if (request.lora != nullptr && config_.config.scheduler.max_loras == 0) {
    return invalid_argument("a LoRA adapter was asked for, and LoRA is off (--enable-lora)");
  }
  // The prefix cache keys a block by the adapter first (as vLLM): no adapter, nor the base model, reuses
  // another's keys and values.  Its id takes a fixed width, so that no salt can pass for another adapter's.
  const int64_t lora_id = request.lora != nullptr ? request.lora->id : 0;
  std::string cache_salt(reinterpret_cast<const char*>(&lora_id), sizeof lora_id);
  cache_salt += request.cache_salt;
  // A model whose cached keys follow the prompt's length keys its blocks by it too.
  const int64_t prompt_key = model_.prompt_cache_key(static_cast<int32_t>(request.prompt_token_ids.size()));
  if (prompt_key != 0) cache_salt += '\0' + std::to_string(prompt_key);
  scheduler_.add_request(std::make_unique<Request>(request.request_id, std::move(request.prompt_token_ids),
                                                   std::move(request.params), std::move(cache_salt),
                                                   std::move(request.lora)));
  return Status::ok();
}

bool EngineCore::abort_request(RequestId id) { return scheduler_.abort_request(id); }

namespace {

std::vector<EngineCoreOutput> timed_out_outputs(const SchedulerOutput& scheduled) {
  std::vector<EngineCoreOutput> timed_out;
  for (RequestId id : scheduled.timed_out) {
    EngineCoreOutput& out = timed_out.emplace_back();
    out.request_id = id;
    out.finish_reason = FinishReason::kQueueTimeout;
  }
  return timed_out;
}

}  // namespace

std::vector<EngineCoreOutput> EngineCore::step() {
  if (max_steps_in_flight_ > 1) return step_pipelined();
  const SchedulerOutput scheduled = scheduler_.schedule();
  std::vector<EngineCoreOutput> timed_out = timed_out_outputs(scheduled);
  // Even with nothing to run: the runner forgets the requests that finished.
  const ModelRunnerOutput sampled = runner_.execute_model(scheduled);
  if (scheduled.chunks.empty()) return timed_out;
  ++num_steps_;
  num_scheduled_tokens_ += scheduled.total_num_scheduled_tokens;
  std::vector<EngineCoreOutput> outputs = scheduler_.update_from_output(scheduled, sampled);
  if (proposer_) propose_drafts(scheduled, outputs);
  outputs.insert(outputs.end(), timed_out.begin(), timed_out.end());
  return outputs;
}

std::vector<EngineCoreOutput> EngineCore::step_pipelined() {
  // vLLM's batch queue: while a stage is free, a new step of the requests
  // not in flight is submitted; when none can be (or every stage is busy),
  // the oldest step's output is awaited.
  std::vector<EngineCoreOutput> outputs;
  if (static_cast<int>(in_flight_.size()) < max_steps_in_flight_) {
    // A stage's share of the requests, so that every stage has a micro-batch to work on.
    const int32_t unfinished = scheduler_.num_running() + scheduler_.num_waiting();
    const int32_t share = std::max<int32_t>(1, (unfinished + max_steps_in_flight_ - 1) / max_steps_in_flight_);
    SchedulerOutput scheduled = scheduler_.schedule(share);
    outputs = timed_out_outputs(scheduled);
    runner_.submit(scheduled);  // without chunks: the runner only forgets the finished requests
    if (!scheduled.chunks.empty()) {
      ++num_steps_;
      num_scheduled_tokens_ += scheduled.total_num_scheduled_tokens;
      in_flight_.push_back(std::move(scheduled));
      return outputs;
    }
  }
  if (in_flight_.empty()) return outputs;
  const SchedulerOutput oldest = std::move(in_flight_.front());
  in_flight_.pop_front();
  const ModelRunnerOutput sampled = runner_.finish(oldest);
  std::vector<EngineCoreOutput> updated = scheduler_.update_from_output(oldest, sampled);
  outputs.insert(outputs.end(), updated.begin(), updated.end());
  return outputs;
}

void EngineCore::propose_drafts(const SchedulerOutput& scheduled, const std::vector<EngineCoreOutput>& outputs) {
  const SpeculativeConfig& spec = *config_.config.speculative;
  std::unordered_set<RequestId> finished;
  for (const EngineCoreOutput& out : outputs) {
    if (out.finish_reason) finished.insert(out.request_id);
  }
  const bool batch_too_large = spec.disable_by_batch_size > 0 && scheduler_.num_running() >= spec.disable_by_batch_size;
  const int32_t max_model_len = config_.config.scheduler.max_model_len;
  const std::span<const float> hidden = runner_.hidden_states();  // with an EAGLE head: every token's, chunk by chunk
  const auto width = static_cast<size_t>(target_hidden_width_);
  InputBatch& batch = runner_.input_batch();
  std::vector<DraftRequest> drafting;
  size_t row = 0;
  for (size_t i = 0; i < scheduled.chunks.size(); ++i) {
    const ScheduledChunk& chunk = scheduled.chunks[i];
    const auto num_rows = static_cast<size_t>(chunk.num_new_tokens());
    row += num_rows;
    if (finished.contains(chunk.request_id)) continue;
    CachedRequestState& r = batch.scheduled(i);
    const auto num_tokens = static_cast<int32_t>(r.token_ids.size());
    const auto num_output_tokens = num_tokens - r.num_prompt_tokens;
    // Every token the verification may yield stays within max_tokens and the context.
    const auto room = static_cast<int32_t>(std::min<int64_t>(
        {spec.num_speculative_tokens, r.params.max_tokens - num_output_tokens - 1, max_model_len - num_tokens - 1}));
    // Only a request whose next step is one token (not a prompt chunk)
    // verifies drafts (the scheduler keeps those its grammar takes).
    const bool takes_drafts = !batch_too_large && num_tokens - r.num_computed_tokens == 1;
    DraftRequest& d = drafting.emplace_back();
    d.id = r.id;
    d.token_ids = r.token_ids;
    d.num_prompt_tokens = r.num_prompt_tokens;
    d.num_computed_tokens = r.num_computed_tokens;
    d.block_table = kv_cache_.block_table(r.id);
    d.num_draft_kv_tokens = &r.num_draft_kv_tokens;
    d.max_drafts = takes_drafts ? std::max(room, 0) : 0;
    if (!hidden.empty()) {
      d.target_hidden = hidden.subspan((row - num_rows) * width, num_rows * width);
      d.target_first_position = chunk.num_computed_tokens;
    }
  }
  if (drafting.empty()) return;
  proposer_->propose(drafting);
  for (DraftRequest& d : drafting) {
    if (!d.drafts.empty()) scheduler_.update_draft_token_ids(d.id, std::move(d.drafts));
  }
}

EngineCoreStats EngineCore::stats() const {
  EngineCoreStats s;
  s.num_running = scheduler_.num_running();
  s.num_waiting = scheduler_.num_waiting();
  s.num_blocks = kv_cache_.pool().num_blocks();
  s.num_free_blocks = kv_cache_.pool().num_free_blocks();
  s.prefix_cache = kv_cache_.prefix_cache_stats();
  s.num_preemptions = scheduler_.num_preemptions();
  s.num_steps = num_steps_;
  s.num_scheduled_tokens = num_scheduled_tokens_;
  if (const auto& lora = config_.config.lora) {
    s.lora =
        LoraStats{lora->max_loras, scheduler_.running_lora_names(), scheduler_.waiting_lora_names(), now_unix_time()};
  }
  if (const auto& spec = config_.config.speculative) {
    s.spec_decoding = scheduler_.spec_decoding_stats();
    s.spec_decoding->num_accepted_tokens_per_pos.resize(static_cast<size_t>(spec->num_speculative_tokens), 0);
  }
  return s;
}

}  // namespace vllm
