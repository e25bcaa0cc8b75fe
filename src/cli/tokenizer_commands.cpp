// `vllm-cpp tokenize | detokenize | chat-template`: JSON Lines in on stdin,
// one JSON line out per input line, in order — for debugging a model's
// tokenizer and for checking it against Hugging Face's outputs.
#include <iostream>
#include <string>

#include "base/json.h"
#include "cli/commands.h"
#include "cli/tokenizer_source.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace vllm::cli {
namespace {

struct TokenizerOptions {
  std::string tokenizer = default_model_dir();
  bool flag = false;  // --add-special-tokens / --skip-special-tokens
};

void write_line(const OrderedJson& out) { std::cout << dump_json(out) << '\n'; }

// Runs `handle` on each input line's JSON object; a line that is not a JSON
// object gets {"error": ...} and the others carry on.
template <typename Handle>
int for_each_line(Handle handle) {
  std::ios::sync_with_stdio(false);
  for (std::string line; std::getline(std::cin, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    OrderedJson in = OrderedJson::parse(line, nullptr, /*allow_exceptions=*/false);
    if (in.is_discarded() || !in.is_object()) {
      write_line({{"error", "input line is not a JSON object"}});
      continue;
    }
    try {
      write_line(handle(in));
    } catch (const OrderedJson::exception& e) {
      write_line({{"error", std::string("bad input: ") + e.what()}});
    }
  }
  std::cout.flush();
  return 0;
}

int run_tokenize(const TokenizerOptions& o) {
  Result<std::unique_ptr<Tokenizer>> tok = load_tokenizer(o.tokenizer);
  if (!tok.is_ok()) return report_error(tok.status().message());
  return for_each_line([&](const OrderedJson& in) {
    const std::vector<int32_t> ids = (*tok)->encode(in.at("text").get<std::string>(), o.flag);
    OrderedJson tokens = OrderedJson::array();
    for (int32_t id : ids) tokens.push_back((*tok)->id_to_token(id));
    return OrderedJson{{"ids", ids}, {"tokens", tokens}};
  });
}

int run_detokenize(const TokenizerOptions& o) {
  Result<std::unique_ptr<Tokenizer>> tok = load_tokenizer(o.tokenizer);
  if (!tok.is_ok()) return report_error(tok.status().message());
  return for_each_line([&](const OrderedJson& in) {
    return OrderedJson{{"text", (*tok)->decode(in.at("ids").get<std::vector<int32_t>>(), o.flag)}};
  });
}

int run_chat_template(const TokenizerOptions& o) {
  Result<std::unique_ptr<Tokenizer>> tok = load_tokenizer(o.tokenizer);
  if (!tok.is_ok()) return report_error(tok.status().message());
  if (!(*tok)->chat_template()) return report_error(o.tokenizer + ": tokenizer_config.json has no chat_template");
  Result<ChatTemplate> tmpl = ChatTemplate::compile(*(*tok)->chat_template());
  if (!tmpl.is_ok()) return report_error(tmpl.status().message());
  // The special tokens of tokenizer_config.json, then the line's "context".
  const OrderedJson defaults = OrderedJson::parse((*tok)->special_token_variables().dump());
  return for_each_line([&](const OrderedJson& in) {
    OrderedJson variables = defaults;
    if (in.contains("context") && in["context"].is_object()) {
      for (const auto& [k, v] : in["context"].items()) variables[k] = v;
    }
    Result<std::string> rendered = tmpl->render(in.at("messages"), in.value("add_generation_prompt", false), variables);
    if (!rendered.is_ok()) return OrderedJson{{"error", rendered.status().message()}};
    return OrderedJson{{"rendered", *rendered}, {"ids", (*tok)->encode(*rendered, false)}};
  });
}

void add_tokenizer_option(CLI::App& app, TokenizerOptions& o) {
  app.add_option("--tokenizer", o.tokenizer,
                 "Model directory, or a directory with just the tokenizer files (default: the embedded stories260k)");
}

}  // namespace

CommandRunner add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizerOptions>();
  add_tokenizer_option(app, *o);
  app.add_flag("--add-special-tokens", o->flag, "Apply the post-processor (e.g. prepend BOS)");
  return [o] { return run_tokenize(*o); };
}

CommandRunner add_detokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizerOptions>();
  add_tokenizer_option(app, *o);
  app.add_flag("--skip-special-tokens", o->flag, "Leave special tokens out of the text");
  return [o] { return run_detokenize(*o); };
}

CommandRunner add_chat_template_command(CLI::App& app) {
  auto o = std::make_shared<TokenizerOptions>();
  add_tokenizer_option(app, *o);
  return [o] { return run_chat_template(*o); };
}

}  // namespace vllm::cli
