// vllm-cpp: LLM inference and serving engine.
#include <algorithm>
#include <cstdio>
#include <map>

#include "base/logging.h"
#include "cli/commands.h"
#include "cli/serve_compat_flags.h"
#include "distributed/world.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"vllm-cpp: a high-throughput LLM inference and serving engine"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log debug details on stderr");
  std::map<CLI::App*, vllm::cli::CommandRunner> runners;
  auto add = [&](const std::string& name, const std::string& help, auto make) {
    CLI::App* sub = app.add_subcommand(name, help);
    runners[sub] = make(*sub);
  };
  add("serve", "Serve the OpenAI-compatible HTTP API", vllm::cli::add_serve_command);
  {
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    CLI::App* serve = bench->add_subcommand("serve", "Load-test an OpenAI-compatible server");
    runners[serve] = vllm::cli::add_bench_serve_command(*serve);
    CLI::App* latency =
        bench->add_subcommand("latency", "Time prefill and decode of one batch, against the machine's limits");
    runners[latency] = vllm::cli::add_bench_latency_command(*latency);
    CLI::App* throughput = bench->add_subcommand("throughput", "Offline throughput of many requests at once");
    runners[throughput] = vllm::cli::add_bench_throughput_command(*throughput);
  }
  add("generate", "Generate completions for one prompt or a file of requests", vllm::cli::add_generate_command);
  add("make-test-model", "Write a random-weight model with real shapes", vllm::cli::add_make_test_model_command);
  add("tokenize", "JSON lines {\"text\"} -> {\"ids\", \"tokens\"}", vllm::cli::add_tokenize_command);
  add("detokenize", "JSON lines {\"ids\"} -> {\"text\"}", vllm::cli::add_detokenize_command);
  add("chat-template", "JSON lines {\"messages\", \"add_generation_prompt\"} -> {\"rendered\", \"ids\"}",
      vllm::cli::add_chat_template_command);
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    vllm::cli::expand_vllm_short_flags(args);
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, and exit status 2 for any misuse of the command line.
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  if (verbose) vllm::set_log_level(vllm::LogLevel::kDebug);
  for (CLI::App* sub : app.get_subcommands()) {
    while (runners.count(sub) == 0 && !sub->get_subcommands().empty()) sub = sub->get_subcommands().front();
    return runners.at(sub)();
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun this process is one rank of a job (distributed/world.h).
  if (vllm::Status s = vllm::init_world(); !s.is_ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return vllm::finish_world(run(argc, argv));
}
