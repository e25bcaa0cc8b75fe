// How the tokens of one request are chosen, what is reported about them, and
// when generation stops: vLLM's SamplingParams, with the ranges and defaults
// of docs/API.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "structured/compiled_grammar.h"
#include "structured/structured_output.h"

namespace vllm {

// How a request's outputs are reported step by step (vLLM's RequestOutputKind).
enum class OutputKind {
  kCumulative,  // each output carries everything generated so far
  kDelta,       // each output carries only what this step added (streaming)
  kFinalOnly,   // one output, when the request finishes
};

struct SamplingParams {
  int32_t n = 1;  // sequences per prompt (the beam width with beam search)

  double temperature = 1.0;     // < 1e-5: greedy
  double top_p = 1.0;           // nucleus: smallest set of tokens holding this much probability
  int32_t top_k = 0;            // -1 or 0: off
  double min_p = 0.0;           // drops tokens below min_p * the top token's probability
  std::optional<int64_t> seed;  // absent: non-deterministic; sequence i of n uses seed + i

  double presence_penalty = 0.0;                          // subtracted once from every token already generated
  double frequency_penalty = 0.0;                         // subtracted per occurrence in the generated tokens
  double repetition_penalty = 1.0;                        // HF-style, over prompt and generated tokens
  std::vector<std::pair<int32_t, double>> logit_bias;     // token id, bias (clamped to [-100, 100])
  std::optional<std::vector<int32_t>> allowed_token_ids;  // only these may be sampled
  std::vector<std::string> bad_words;                     // never generated
  // bad_words as token sequences (vLLM's reading: each word alone and after
  // a space); the InputProcessor sets them with the tokenizer.
  std::vector<std::vector<int32_t>> bad_words_token_ids;

  int64_t min_tokens = 0;  // EOS and stop tokens are masked until this many tokens exist
  int64_t max_tokens = 16;
  // max_tokens left to the engine: the rest of the context after the prompt
  // (vLLM's max_tokens None; the InputProcessor sets it).
  bool max_tokens_from_context = false;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool include_stop_str_in_output = false;
  bool ignore_eos = false;

  std::optional<int32_t> logprobs;         // top-N per generated token (0: the sampled token only)
  std::optional<int32_t> prompt_logprobs;  // top-N per prompt token
  bool skip_special_tokens = true;
  // Accepted for vLLM compatibility; like Hugging Face's fast tokenizers,
  // tokenizer.json decoding has no spaces to add between special tokens.
  bool spaces_between_special_tokens = true;

  bool use_beam_search = false;  // width n
  double length_penalty = 1.0;   // beam score = cumulative logprob / length^length_penalty

  OutputKind output_kind = OutputKind::kCumulative;

  // What the text must conform to (vLLM's structured_outputs), and its
  // grammar over this model's vocabulary, compiled by the InputProcessor.
  std::optional<structured::StructuredOutputSpec> structured_outputs;
  std::shared_ptr<const structured::CompiledGrammar> grammar;
  // The grammar applies only to the tokens after this one: a reasoning
  // model's end of thinking (vLLM constrains the answer, not the thought).
  std::optional<int32_t> grammar_after_token_id;
  // Beam search's one-token rounds continue a beam under the request's
  // grammar: the prompt ends with the beam's own tokens, which the grammar
  // takes before the round's token, and the grammar steers towards an end
  // within what the search has left of max_tokens, not the round's one token.
  struct GrammarResume {
    int64_t num_prompt_tokens = 0;
    int64_t token_budget = 0;
  };
  std::optional<GrammarResume> grammar_resume;

  // Ranges and combinations that need no model: the error names the field.
  Status validate() const;
  bool is_greedy() const { return temperature < 1e-5; }
  bool needs_prompt_logprobs() const { return prompt_logprobs.has_value(); }
};

}  // namespace vllm
