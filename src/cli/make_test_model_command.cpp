// `vllm-cpp make-test-model`: a random-weight model directory with real shapes.
#include "base/thread_pool.h"
#include "cli/commands.h"
#include "cli/test_model_writer.h"

namespace vllm::cli {
namespace {

struct MakeTestModelOptions {
  std::optional<std::string> arch;
  std::string preset;
  std::string eagle_head_for;
  std::string eagle3_head_for;
  std::string dtype = "f32";
  uint64_t seed = 0;
  int num_shards = 1;
  std::optional<int64_t> vocab_size;
  std::optional<int64_t> num_layers;
  std::string tokenizer = default_model_dir();
  std::string out;
};

int run_make_test_model(const MakeTestModelOptions& o) {
  const int given = !o.preset.empty() + !o.eagle_head_for.empty() + !o.eagle3_head_for.empty();
  if (given != 1) return report_error("give one of --preset, --eagle-head-for and --eagle3-head-for");
  const auto kind = !o.eagle_head_for.empty()    ? TestModelOptions::Kind::kEagleHead
                    : !o.eagle3_head_for.empty() ? TestModelOptions::Kind::kEagle3Head
                                                 : TestModelOptions::Kind::kModel;
  Result<TestModelPreset> preset =
      kind == TestModelOptions::Kind::kEagleHead    ? eagle_head_preset(o.eagle_head_for, o.num_layers.value_or(1))
      : kind == TestModelOptions::Kind::kEagle3Head ? eagle_head_preset(o.eagle3_head_for, 1, /*eagle3=*/true)
                                                    : find_test_model_preset(o.preset, o.arch);
  if (!preset.is_ok()) return report_error(preset.status().message());
  TestModelOptions options;
  options.preset = std::move(preset).value();
  options.kind = kind;
  if (o.vocab_size) options.preset.config["vocab_size"] = *o.vocab_size;
  if (o.num_layers) options.preset.config["num_hidden_layers"] = *o.num_layers;
  options.dtype = o.dtype == "bf16" ? DType::kBF16 : o.dtype == "f16" ? DType::kF16 : DType::kF32;
  options.seed = o.seed;
  options.num_shards = o.num_shards;
  options.tokenizer_dir = o.tokenizer;
  options.out_dir = o.out;
  ThreadPool pool(ThreadPool::default_num_threads());
  Status status = write_test_model(options, pool);
  if (!status.is_ok()) return report_error(status.message());
  std::fprintf(stderr, "wrote %s (%s, %s, preset %s)\n", o.out.c_str(), options.preset.arch.c_str(), o.dtype.c_str(),
               options.preset.name.c_str());
  return 0;
}

}  // namespace

CommandRunner add_make_test_model_command(CLI::App& app) {
  auto o = std::make_shared<MakeTestModelOptions>();
  app.add_option("--arch", o->arch, "Architecture (required for --preset tiny)")
      ->check(CLI::IsMember(test_model_arch_names()));
  app.add_option("--preset", o->preset, "Shape preset")->check(CLI::IsMember(test_model_preset_names()));
  app.add_option("--eagle-head-for", o->eagle_head_for,
                 "Instead of a preset: a random EAGLE head (speculative decoding) for the model in this directory");
  app.add_option("--eagle3-head-for", o->eagle3_head_for,
                 "Instead of a preset: a random EAGLE-3 head for the model in this directory");
  app.add_option("--dtype", o->dtype, "Weight dtype")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->capture_default_str();
  app.add_option("--seed", o->seed, "Random seed of the weights")->capture_default_str();
  app.add_option("--num-shards", o->num_shards, "Split the weights over this many safetensors files")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--vocab-size", o->vocab_size,
                 "Vocabulary size instead of the preset's (at least the tokenizer's, e.g. a real tokenizer's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  // The weights of a layer depend on the seed and its name only: with the
  // same seed a shallower model is the deeper one's first layers, embedding
  // and head (a layer-skipping draft for speculative decoding).
  app.add_option("--num-layers", o->num_layers, "Decoder layers instead of the preset's")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  app.add_option("--tokenizer", o->tokenizer, "Directory whose tokenizer.json is padded to the preset's vocabulary");
  app.add_option("--out", o->out, "Output directory")->required();
  return [o] { return run_make_test_model(*o); };
}

}  // namespace vllm::cli
