// `vllm-cpp generate`: one prompt in, its completion on stdout; timings on stderr.
#include <cstdio>
#include <optional>

#include "base/logging.h"
#include "base/thread_pool.h"
#include "cli/commands.h"
#include "engine/sequence_generator.h"
#include "model/decoder_model.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace vllm::cli {
namespace {

struct GenerateOptions {
  std::string model = default_model_dir();
  std::string prompt;
  int64_t max_tokens = 16;
  double temperature = 1.0;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
  int threads = ThreadPool::default_num_threads();
};

int run_generate(const GenerateOptions& o) {
  Result<std::unique_ptr<DecoderModel>> model = DecoderModel::load(o.model);
  if (!model.is_ok()) return report_error(model.status().message());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::load(o.model);
  if (!tokenizer.is_ok()) return report_error(tokenizer.status().message());

  SamplingParams params;
  params.max_tokens = o.max_tokens;
  params.temperature = o.temperature;
  params.seed = o.seed;
  params.ignore_eos = o.ignore_eos;
  const std::vector<int32_t> prompt_ids = (*tokenizer)->encode(o.prompt, /*add_special_tokens=*/true);

  ThreadPool pool(o.threads);
  SequenceGenerator generator(**model, pool);
  // The completion streams as it is generated; decoded after the prompt so
  // that its leading space is kept, as an OpenAI completion returns it.
  IncrementalDetokenizer detokenizer(**tokenizer, /*skip_special_tokens=*/true, prompt_ids);
  auto print = [](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  Result<GenerationResult> result =
      generator.generate(prompt_ids, params, [&](int32_t token) { print(detokenizer.push(token)); });
  if (!result.is_ok()) return report_error(result.status().message());
  print(detokenizer.flush() + "\n");

  const size_t n = result->token_ids.size();
  const double decode_rate =
      n > 1 && result->decode_seconds > 0 ? static_cast<double>(n - 1) / result->decode_seconds : 0.0;
  std::fprintf(stderr,
               "prompt: %zu tokens, prefill %.1f ms (%.1f tokens/s); generated %zu tokens, decode %.1f tokens/s; "
               "finish_reason=%s; threads=%d\n",
               prompt_ids.size(), result->prefill_seconds * 1e3,
               static_cast<double>(prompt_ids.size()) / std::max(result->prefill_seconds, 1e-9), n, decode_rate,
               finish_reason_name(result->finish_reason), pool.num_threads());
  return 0;
}

}  // namespace

CommandRunner add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  app.add_option("--model", o->model, "Hugging Face model directory (default: the embedded stories260k)");
  app.add_option("--prompt", o->prompt, "Prompt text (default: empty, i.e. generate from BOS)");
  app.add_option("--max-tokens", o->max_tokens, "Maximum number of tokens to generate")->capture_default_str();
  app.add_option("--temperature", o->temperature, "Sampling temperature; 0 = greedy")->capture_default_str();
  app.add_option("--seed", o->seed, "Random seed for sampling (default: non-deterministic)");
  app.add_flag("--ignore-eos", o->ignore_eos, "Keep generating past the end-of-sequence token");
  app.add_option("--threads", o->threads, "Compute threads (default: the CPUs this process may use)")
      ->check(CLI::Range(1, 1024));
  return [o] { return run_generate(*o); };
}

}  // namespace vllm::cli
