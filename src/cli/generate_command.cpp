// `vllm-cpp generate`: one prompt, its completion streamed on stdout; or a
// whole JSON-lines file of requests run through the engine together.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

#include "base/clock.h"
#include "cli/batch_requests.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "engine/engine_client.h"
#include "engine/llm_engine.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace vllm::cli {
namespace {

struct GenerateOptions {
  std::string model = default_model_dir();
  std::string tokenizer;  // empty: the model's
  std::string prompt;
  std::string input;  // JSON lines; empty: --prompt
  std::string output = "-";
  int64_t max_tokens = 16;
  double temperature = 1.0;
  std::optional<int64_t> seed;
  bool ignore_eos = false;
  EngineFlags engine;
};

SamplingParams default_params(const GenerateOptions& o) {
  SamplingParams params;
  params.max_tokens = o.max_tokens;
  params.temperature = o.temperature;
  params.seed = o.seed;
  params.ignore_eos = o.ignore_eos;
  params.output_kind = OutputKind::kFinalOnly;  // generate() reports each request once, at the end
  return params;
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// Streams the completion of --prompt as it comes (`threads`: the engine's, for the summary).
int run_one_prompt(const GenerateOptions& o, EngineClient& engine, int threads) {
  SamplingParams params = default_params(o);
  params.output_kind = OutputKind::kDelta;
  Result<std::shared_ptr<RequestStream>> stream = engine.add_request("0", PromptInput::from_text(o.prompt), params);
  if (!stream.is_ok()) return report_error(stream.status().message());
  const double start = now_seconds();  // the prompt is tokenised: prefill starts
  double first_token_at = 0.0;
  size_t num_prompt = 0, num_generated = 0;
  std::optional<FinishReason> finish_reason;
  RequestOutput out;
  while ((*stream)->next(out)) {
    if (num_generated == 0) {
      first_token_at = now_seconds();
      num_prompt = out.prompt_token_ids.size();
    }
    num_generated += out.outputs[0].token_ids.size();
    print(out.outputs[0].text);
    finish_reason = out.outputs[0].finish_reason;
  }
  print("\n");
  const double end = now_seconds();
  const double prefill = first_token_at - start;
  const double decode_rate = num_generated > 1 ? static_cast<double>(num_generated - 1) / (end - first_token_at) : 0.0;
  std::fprintf(stderr,
               "prompt: %zu tokens, prefill %.1f ms (%.1f tokens/s); generated %zu tokens, decode %.1f tokens/s; "
               "finish_reason=%s; threads=%d",
               num_prompt, prefill * 1e3, static_cast<double>(num_prompt) / std::max(prefill, 1e-9), num_generated,
               decode_rate, finish_reason ? finish_reason_name(*finish_reason) : "none", threads);
  if (const auto spec = engine.stats().spec_decoding) {
    std::fprintf(stderr, "; %s", spec_decoding_summary(*spec).c_str());
  }
  std::fprintf(stderr, "\n");
  return 0;
}

// What --input's requests run on: the engine itself, or with data
// parallelism the front door of its replicas.
struct BatchEngine {
  std::function<Status(const PromptInput&, const SamplingParams&)> check;
  std::function<Result<std::vector<RequestOutput>>(const std::vector<PromptInput>&, const std::vector<SamplingParams>&)>
      generate;
  std::function<EngineCoreStats()> stats;
};

BatchEngine batch_engine(LLMEngine& engine) {
  return {[&engine](const PromptInput& prompt, const SamplingParams& params) {
            return engine.process_inputs(prompt, params).status();
          },
          [&engine](const std::vector<PromptInput>& prompts, const std::vector<SamplingParams>& params) {
            return engine.generate(prompts, params);
          },
          [&engine] { return engine.stats(); }};
}

// Every request added at once; their final outputs in input order.
BatchEngine batch_engine(EngineClient& engine) {
  return {[&engine](const PromptInput& prompt, const SamplingParams& params) {
            return engine.check_request(prompt, params);
          },
          [&engine](const std::vector<PromptInput>& prompts,
                    const std::vector<SamplingParams>& params) -> Result<std::vector<RequestOutput>> {
            std::vector<std::shared_ptr<RequestStream>> streams;
            for (size_t i = 0; i < prompts.size(); ++i) {
              VLLM_ASSIGN_OR_RETURN(streams.emplace_back(),
                                    engine.add_request(std::to_string(i), prompts[i], params[i]));
            }
            std::vector<RequestOutput> outputs(prompts.size());
            for (size_t i = 0; i < streams.size(); ++i) {
              while (streams[i]->next(outputs[i])) {
              }
            }
            return outputs;
          },
          [&engine] { return engine.stats(); }};
}

int run_batch(const GenerateOptions& o, const BatchEngine& engine) {
  Result<std::vector<BatchRequest>> requests = read_batch_requests(o.input, default_params(o));
  if (!requests.is_ok()) return report_error(requests.status().message());
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (const BatchRequest& r : *requests) {
    // Checked here to name the line; generate() checks again.
    if (Status s = engine.check(r.prompt, r.params); !s.is_ok()) {
      return report_error(o.input + " line " + std::to_string(r.line_number) + ": " + s.message());
    }
    prompts.push_back(r.prompt);
    params.push_back(r.params);
  }
  const double start = now_seconds();
  Result<std::vector<RequestOutput>> outputs = engine.generate(prompts, params);
  if (!outputs.is_ok()) return report_error(o.input + ": " + outputs.status().message());
  const double wall = now_seconds() - start;

  std::ofstream file;
  if (o.output != "-") {
    file.open(o.output);
    if (!file) return report_error("cannot write " + o.output);
  }
  std::ostream& out = o.output == "-" ? std::cout : file;
  size_t num_prompt = 0, num_generated = 0;
  for (size_t i = 0; i < outputs->size(); ++i) {
    const RequestOutput& r = (*outputs)[i];
    num_prompt += r.prompt_token_ids.size();
    for (const CompletionOutput& c : r.outputs) num_generated += c.token_ids.size();
    out << dump_json(batch_output_json(i, r)) << '\n';
  }
  out.flush();
  if (!out) return report_error("cannot write " + o.output);

  const EngineCoreStats stats = engine.stats();
  const double hit_rate = stats.prefix_cache.queries_tokens > 0
                              ? 100.0 * static_cast<double>(stats.prefix_cache.hits_tokens) /
                                    static_cast<double>(stats.prefix_cache.queries_tokens)
                              : 0.0;
  std::fprintf(stderr,
               "requests: %zu, prompt tokens: %zu, generated tokens: %zu, wall time: %.2f s, throughput: %.1f "
               "tokens/s (generated %.1f tokens/s, %.2f requests/s), prefix cache hit rate: %.1f%%, preemptions: "
               "%lld, steps: %lld",
               outputs->size(), num_prompt, num_generated, wall, static_cast<double>(num_prompt + num_generated) / wall,
               static_cast<double>(num_generated) / wall, static_cast<double>(outputs->size()) / wall, hit_rate,
               static_cast<long long>(stats.num_preemptions), static_cast<long long>(stats.num_steps));
  if (stats.spec_decoding) std::fprintf(stderr, ", %s", spec_decoding_summary(*stats.spec_decoding).c_str());
  std::fprintf(stderr, "\n");
  return 0;
}

int run_generate(const GenerateOptions& o) {
  Result<LoadedEngine> loaded = load_engine(o.model, o.engine, o.tokenizer);
  if (!loaded.is_ok()) return report_error(loaded.status().message());
  if (loaded->worker_finished) return 0;
  const int threads = loaded->engine->core().config().config.num_threads;
  if (loaded->replica_leaders == nullptr && !o.input.empty()) return run_batch(o, batch_engine(*loaded->engine));
  Result<std::unique_ptr<EngineClient>> client = start_engine_client(*loaded);
  if (!client.is_ok()) return report_error(client.status().message());
  if (*client == nullptr) return 0;  // a data-parallel replica's leader, which rank 0 has stopped
  if (o.input.empty()) return run_one_prompt(o, **client, threads);
  return run_batch(o, batch_engine(**client));
}

}  // namespace

CommandRunner add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  app.add_option("--model", o->model, "Hugging Face model directory or GGUF file (default: the embedded stories260k)");
  app.add_option("--tokenizer", o->tokenizer, "Tokenizer directory or GGUF file (default: the model's)");
  auto* prompt = app.add_option("--prompt", o->prompt, "Prompt text (default: empty, i.e. generate from BOS)");
  app.add_option("--input", o->input,
                 "JSON lines of requests ({\"prompt\" or \"prompt_token_ids\", \"cache_salt\", \"lora\" (a "
                 "--lora-modules name), and any sampling "
                 "field of docs/API.md: \"n\", \"temperature\", \"top_p\", \"stop\", \"logprobs\", "
                 "\"use_beam_search\"...}; - for stdin), run together")
      ->excludes(prompt);
  app.add_option("--output", o->output, "Where --input's results go, one JSON line per request (default: stdout)");
  app.add_option("--max-tokens", o->max_tokens, "Maximum number of tokens to generate")->capture_default_str();
  app.add_option("--temperature", o->temperature, "Sampling temperature; 0 = greedy")->capture_default_str();
  app.add_option("--seed", o->seed, "Random seed for sampling (default: non-deterministic)");
  app.add_flag("--ignore-eos", o->ignore_eos, "Keep generating past the end-of-sequence token");
  add_engine_flags(app, o->engine);
  return [o] { return run_generate(*o); };
}

}  // namespace vllm::cli
