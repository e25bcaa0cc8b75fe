// The `vllm-cpp` subcommands.  Each registers its flags on the CLI11 app and
// returns a function that runs it and gives the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace vllm::cli {

using CommandRunner = std::function<int()>;

CommandRunner add_generate_command(CLI::App& app);
CommandRunner add_serve_command(CLI::App& app);
CommandRunner add_bench_serve_command(CLI::App& app);
CommandRunner add_bench_latency_command(CLI::App& app);
CommandRunner add_bench_throughput_command(CLI::App& app);
CommandRunner add_make_test_model_command(CLI::App& app);
CommandRunner add_tokenize_command(CLI::App& app);
CommandRunner add_detokenize_command(CLI::App& app);
CommandRunner add_chat_template_command(CLI::App& app);

// The model used when no --model is given: the embedded stories260k.
const char* default_model_dir();

// Prints "error: <message>" on stderr and returns the exit code 1.
int report_error(const std::string& message);

}  // namespace vllm::cli
