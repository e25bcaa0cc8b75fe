#include "engine/data_parallel/replica_messages.h"

#include <utility>

#include "base/byte_codec.h"

namespace vllm::data_parallel {
namespace {

// write() and read() of each type, field by field in the same order.

void write(ByteWriter& w, const PromptInput& p) {
  w.put(p.text);
  w.put(p.token_ids);
  w.put(p.cache_salt);
  w.put(p.lora_name);
  w.put(p.add_special_tokens);
  w.put(p.truncate_prompt_tokens);
}

void read(ByteReader& r, PromptInput& p) {
  r.get(p.text);
  r.get(p.token_ids);
  r.get(p.cache_salt);
  r.get(p.lora_name);
  r.get(p.add_special_tokens);
  r.get(p.truncate_prompt_tokens);
}

void write(ByteWriter& w, const structured::StructuredOutputSpec& s) {
  w.put(s.kind);
  w.put(s.source);
  w.put(s.choices);
  w.put(s.request_field);
  w.put(s.any_whitespace);
}

void read(ByteReader& r, structured::StructuredOutputSpec& s) {
  r.get(s.kind);
  r.get(s.source);
  r.get(s.choices);
  r.get(s.request_field);
  r.get(s.any_whitespace);
}

void write(ByteWriter& w, const SamplingParams& p) {
  w.put(p.n);
  w.put(p.temperature);
  w.put(p.top_p);
  w.put(p.top_k);
  w.put(p.min_p);
  w.put(p.seed);
  w.put(p.presence_penalty);
  w.put(p.frequency_penalty);
  w.put(p.repetition_penalty);
  w.put(static_cast<uint64_t>(p.logit_bias.size()));
  for (const auto& [token, bias] : p.logit_bias) {
    w.put(token);
    w.put(bias);
  }
  w.put(p.allowed_token_ids);
  w.put(p.bad_words);
  w.put(p.bad_words_token_ids);
  w.put(p.min_tokens);
  w.put(p.max_tokens);
  w.put(p.max_tokens_from_context);
  w.put(p.stop);
  w.put(p.stop_token_ids);
  w.put(p.include_stop_str_in_output);
  w.put(p.ignore_eos);
  w.put(p.logprobs);
  w.put(p.prompt_logprobs);
  w.put(p.skip_special_tokens);
  w.put(p.spaces_between_special_tokens);
  w.put(p.use_beam_search);
  w.put(p.length_penalty);
  w.put(p.output_kind);
  w.put(p.structured_outputs.has_value());
  if (p.structured_outputs) write(w, *p.structured_outputs);
  w.put(p.grammar_after_token_id);
  w.put(p.grammar_resume);
}

void read(ByteReader& r, SamplingParams& p) {
  r.get(p.n);
  r.get(p.temperature);
  r.get(p.top_p);
  r.get(p.top_k);
  r.get(p.min_p);
  r.get(p.seed);
  r.get(p.presence_penalty);
  r.get(p.frequency_penalty);
  r.get(p.repetition_penalty);
  p.logit_bias.resize(r.get<uint64_t>());
  for (auto& [token, bias] : p.logit_bias) {
    r.get(token);
    r.get(bias);
  }
  r.get(p.allowed_token_ids);
  r.get(p.bad_words);
  r.get(p.bad_words_token_ids);
  r.get(p.min_tokens);
  r.get(p.max_tokens);
  r.get(p.max_tokens_from_context);
  r.get(p.stop);
  r.get(p.stop_token_ids);
  r.get(p.include_stop_str_in_output);
  r.get(p.ignore_eos);
  r.get(p.logprobs);
  r.get(p.prompt_logprobs);
  r.get(p.skip_special_tokens);
  r.get(p.spaces_between_special_tokens);
  r.get(p.use_beam_search);
  r.get(p.length_penalty);
  r.get(p.output_kind);
  if (r.get<bool>()) read(r, p.structured_outputs.emplace());
  r.get(p.grammar_after_token_id);
  r.get(p.grammar_resume);
}

void write(ByteWriter& w, const std::optional<std::vector<PositionLogprobs>>& positions) {
  w.put(positions.has_value());
  if (!positions) return;
  w.put(static_cast<uint64_t>(positions->size()));
  for (const PositionLogprobs& p : *positions) {
    w.put(p.chosen);
    w.put(p.top);
  }
}

void read(ByteReader& r, std::optional<std::vector<PositionLogprobs>>& positions) {
  positions.reset();
  if (!r.get<bool>()) return;
  positions.emplace(r.get<uint64_t>());
  for (PositionLogprobs& p : *positions) {
    r.get(p.chosen);
    r.get(p.top);
  }
}

// StopReason: nothing, a stop string, or a stop token id.
void write(ByteWriter& w, const StopReason& reason) {
  w.put(static_cast<uint8_t>(reason.index()));
  if (const auto* text = std::get_if<std::string>(&reason)) w.put(*text);
  if (const auto* token = std::get_if<int32_t>(&reason)) w.put(*token);
}

void read(ByteReader& r, StopReason& reason) {
  switch (r.get<uint8_t>()) {
    case 0:
      reason = std::monostate{};
      break;
    case 1:
      reason = r.get<std::string>();
      break;
    default:
      reason = r.get<int32_t>();
      break;
  }
}

void write(ByteWriter& w, const RequestOutput& out) {
  w.put(out.request_id);
  w.put(out.prompt_token_ids);
  write(w, out.prompt_logprobs);
  w.put(static_cast<uint64_t>(out.outputs.size()));
  for (const CompletionOutput& c : out.outputs) {
    w.put(c.index);
    w.put(c.text);
    w.put(c.token_ids);
    w.put(c.cumulative_logprob);
    write(w, c.logprobs);
    w.put(c.finish_reason);
    write(w, c.stop_reason);
  }
  w.put(out.finished);
  w.put(out.queue_times);
}

void read(ByteReader& r, RequestOutput& out) {
  r.get(out.request_id);
  r.get(out.prompt_token_ids);
  read(r, out.prompt_logprobs);
  out.outputs.resize(r.get<uint64_t>());
  for (CompletionOutput& c : out.outputs) {
    r.get(c.index);
    r.get(c.text);
    r.get(c.token_ids);
    r.get(c.cumulative_logprob);
    read(r, c.logprobs);
    r.get(c.finish_reason);
    read(r, c.stop_reason);
  }
  r.get(out.finished);
  r.get(out.queue_times);
}

void write(ByteWriter& w, const EngineCoreStats& s) {
  w.put(s.num_running);
  w.put(s.num_waiting);
  w.put(s.num_blocks);
  w.put(s.num_free_blocks);
  w.put(s.prefix_cache);
  w.put(s.num_preemptions);
  w.put(s.num_steps);
  w.put(s.num_scheduled_tokens);
  w.put(s.spec_decoding.has_value());
  if (s.spec_decoding) {
    w.put(s.spec_decoding->num_drafts);
    w.put(s.spec_decoding->num_draft_tokens);
    w.put(s.spec_decoding->num_accepted_tokens);
    w.put(s.spec_decoding->num_accepted_tokens_per_pos);
  }
  w.put(s.lora.has_value());
  if (s.lora) {
    w.put(s.lora->max_loras);
    w.put(s.lora->running_adapters);
    w.put(s.lora->waiting_adapters);
    w.put(s.lora->unix_time);
  }
}

void read(ByteReader& r, EngineCoreStats& s) {
  r.get(s.num_running);
  r.get(s.num_waiting);
  r.get(s.num_blocks);
  r.get(s.num_free_blocks);
  r.get(s.prefix_cache);
  r.get(s.num_preemptions);
  r.get(s.num_steps);
  r.get(s.num_scheduled_tokens);
  if (r.get<bool>()) {
    SpecDecodingStats& spec = s.spec_decoding.emplace();
    r.get(spec.num_drafts);
    r.get(spec.num_draft_tokens);
    r.get(spec.num_accepted_tokens);
    r.get(spec.num_accepted_tokens_per_pos);
  }
  if (r.get<bool>()) {
    LoraStats& lora = s.lora.emplace();
    r.get(lora.max_loras);
    r.get(lora.running_adapters);
    r.get(lora.waiting_adapters);
    r.get(lora.unix_time);
  }
}

void write(ByteWriter& w, const LoraModule& m) {
  w.put(m.name);
  w.put(m.path);
  w.put(m.base_model_name);
}

void read(ByteReader& r, LoraModule& m) {
  r.get(m.name);
  r.get(m.path);
  r.get(m.base_model_name);
}

// The body of each kind of message, after its variant index.
void write_body(ByteWriter& w, const AddRequest& m) {
  w.put(m.request_id);
  write(w, m.prompt);
  write(w, m.params);
}
void read_body(ByteReader& r, AddRequest& m) {
  r.get(m.request_id);
  read(r, m.prompt);
  read(r, m.params);
}
void write_body(ByteWriter& w, const AbortRequest& m) { w.put(m.request_id); }
void read_body(ByteReader& r, AbortRequest& m) { r.get(m.request_id); }
void write_body(ByteWriter& w, const LoadLora& m) {
  write(w, m.module);
  w.put(m.replace);
}
void read_body(ByteReader& r, LoadLora& m) {
  read(r, m.module);
  r.get(m.replace);
}
void write_body(ByteWriter& w, const UnloadLora& m) { w.put(m.name); }
void read_body(ByteReader& r, UnloadLora& m) { r.get(m.name); }
void write_body(ByteWriter&, const Shutdown&) {}
void read_body(ByteReader&, Shutdown&) {}
void write_body(ByteWriter& w, const Outputs& m) {
  w.put(static_cast<uint64_t>(m.outputs.size()));
  for (const RequestOutput& out : m.outputs) write(w, out);
}
void read_body(ByteReader& r, Outputs& m) {
  m.outputs.resize(r.get<uint64_t>());
  for (RequestOutput& out : m.outputs) read(r, out);
}
void write_body(ByteWriter& w, const Stats& m) { write(w, m.stats); }
void read_body(ByteReader& r, Stats& m) { read(r, m.stats); }
void write_body(ByteWriter& w, const LoraDone& m) {
  w.put(m.status.code());
  w.put(m.status.message());
}
void read_body(ByteReader& r, LoraDone& m) {
  const auto code = r.get<StatusCode>();
  m.status = Status(code, r.get<std::string>());
}
void write_body(ByteWriter&, const Stopped&) {}
void read_body(ByteReader&, Stopped&) {}

// The alternative of `message` whose index is `index`, read from `r`.
template <size_t I = 0>
void read_alternative(ByteReader& r, size_t index, ReplicaMessage& message) {
  if constexpr (I < std::variant_size_v<ReplicaMessage>) {
    if (index == I) {
      read_body(r, message.emplace<I>());
    } else {
      read_alternative<I + 1>(r, index, message);
    }
  } else {
    VLLM_CHECK(false, "a replica message of an unknown kind");
  }
}

}  // namespace

std::string encode(const ReplicaMessage& message) {
  ByteWriter w;
  w.put(static_cast<uint8_t>(message.index()));
  std::visit([&](const auto& m) { write_body(w, m); }, message);
  return w.take();
}

ReplicaMessage decode(const std::string& bytes) {
  ByteReader r(bytes);
  ReplicaMessage message;
  read_alternative(r, r.get<uint8_t>(), message);
  VLLM_CHECK(r.at_end(), "a replica message longer than its contents");
  return message;
}

}  // namespace vllm::data_parallel
