// Tool-call and reasoning parsers on model outputs as the model families
// write them (the formats of their chat templates and model cards), whole
// and streamed in pieces of every size: the pieces must add up to the whole.
#include "api/chat_output_parser.h"

#include <gtest/gtest.h>

#include "api/tools/json_text.h"

namespace vllm::api {
namespace {

struct Call {
  std::string name;
  Json arguments;  // compared as JSON values
  bool operator==(const Call&) const = default;
};

struct Answer {
  std::string reasoning;
  std::string content;
  std::vector<Call> calls;
  bool chose_tools = false;
};

// Feeds `text` in pieces of `piece` bytes (0: whole) and gathers the deltas.
Answer parse(const ChatOutputOptions& options, std::string_view text, size_t piece = 0) {
  ChatOutputParser parser(options);
  ChatDelta all;
  const size_t step = piece == 0 ? std::max<size_t>(text.size(), 1) : piece;
  for (size_t at = 0; at < text.size(); at += step) all.append(parser.push(text.substr(at, step)));
  all.append(parser.finish());
  Answer answer{all.reasoning, all.content, {}, parser.chose_tools()};
  std::vector<std::string> arguments;
  for (const ToolCallDelta& d : all.tool_calls) {
    if (d.opens) {
      EXPECT_EQ(d.index, answer.calls.size());
      answer.calls.push_back({d.name, nullptr});
      arguments.push_back(d.arguments);
    } else {
      arguments.at(d.index) += d.arguments;
    }
  }
  for (size_t i = 0; i < answer.calls.size(); ++i) {
    answer.calls[i].arguments = Json::parse(arguments[i], nullptr, false);
    EXPECT_FALSE(answer.calls[i].arguments.is_discarded()) << arguments[i];
  }
  return answer;
}

// Whole, and streamed byte by byte and in pieces of 2, 3, 5 and 7 bytes: the same answer.
Answer parse_every_way(const ChatOutputOptions& options, std::string_view text) {
  const Answer whole = parse(options, text);
  for (size_t piece : {1, 2, 3, 5, 7}) {
    const Answer streamed = parse(options, text, piece);
    EXPECT_EQ(streamed.reasoning, whole.reasoning) << "piece " << piece;
    EXPECT_EQ(streamed.content, whole.content) << "piece " << piece;
    EXPECT_EQ(streamed.calls, whole.calls) << "piece " << piece;
    EXPECT_EQ(streamed.chose_tools, whole.chose_tools) << "piece " << piece;
  }
  return whole;
}

class AutoToolChoice : public ::testing::Test {
 protected:
  ChatOutputOptions options(const std::string& parser_name) {
    Result<std::unique_ptr<ToolCallParser>> made = make_tool_call_parser(parser_name);
    EXPECT_TRUE(made.is_ok()) << made.status().message();
    parser_ = std::move(made).value();
    ChatOutputOptions o;
    o.tool_choice = ToolChoice::kAuto;
    o.tool_parser = parser_.get();
    return o;
  }
  std::unique_ptr<ToolCallParser> parser_;
};

TEST_F(AutoToolChoice, HermesCallsAfterContent) {
  // Qwen2.5's documented answer to two weather questions, after a sentence.
  const std::string text =
      "Let me check both.\n<tool_call>\n{\"name\": \"get_current_temperature\", \"arguments\": {\"location\": "
      "\"San Francisco, CA, USA\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_temperature_date\", \"arguments\": "
      "{\"location\": \"San Francisco, CA, USA\", \"date\": \"2024-10-01\", \"unit\": \"celsius\"}}\n</tool_call>";
  const Answer a = parse_every_way(options("hermes"), text);
  EXPECT_EQ(a.content, "Let me check both.\n");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0], (Call{"get_current_temperature", Json{{"location", "San Francisco, CA, USA"}}}));
  EXPECT_EQ(a.calls[1].name, "get_temperature_date");
  EXPECT_EQ(a.calls[1].arguments["date"], "2024-10-01");
  EXPECT_TRUE(a.chose_tools);
}

TEST_F(AutoToolChoice, HermesUnclosedLastCallAndStringArguments) {
  const Answer a =
      parse_every_way(options("hermes"), "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": [1, 2]}\"}\n");
  EXPECT_EQ(a.content, "");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0], (Call{"f", Json{{"x", {1, 2}}}}));
}

TEST_F(AutoToolChoice, HermesInvalidCallIsContent) {
  const std::string text = "Sure <tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call>";
  const Answer a = parse_every_way(options("hermes"), text);
  EXPECT_EQ(a.content, text);
  EXPECT_TRUE(a.calls.empty());
  EXPECT_FALSE(a.chose_tools);
}

TEST_F(AutoToolChoice, PlainAnswersStreamAsContent) {
  for (const char* parser : {"hermes", "llama3_json", "mistral", "pythonic"}) {
    const Answer a = parse_every_way(options(parser), "  The weather in Paris is sunny <tool_ and 20 C. [x]");
    EXPECT_EQ(a.content, "  The weather in Paris is sunny <tool_ and 20 C. [x]") << parser;
    EXPECT_TRUE(a.calls.empty()) << parser;
  }
}

TEST_F(AutoToolChoice, Llama3JsonParametersAndPythonTag) {
  // Llama 3.1's documented JSON call, and two calls after <|python_tag|> joined by "; ".
  Answer a = parse_every_way(options("llama3_json"),
                             "{\"name\": \"get_current_conditions\", \"parameters\": {\"location\": \"San Francisco, "
                             "CA\", \"unit\": \"Fahrenheit\"}}");
  EXPECT_EQ(a.content, "");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].arguments, (Json{{"location", "San Francisco, CA"}, {"unit", "Fahrenheit"}}));
  a = parse_every_way(options("llama3_json"),
                      "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"n\": 1}}; {\"name\": \"b\", \"arguments\": "
                      "{\"s\": \"}{\"}}");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0], (Call{"a", Json{{"n", 1}}}));
  EXPECT_EQ(a.calls[1], (Call{"b", Json{{"s", "}{"}}}));
}

TEST_F(AutoToolChoice, MistralListAndNamedForms) {
  // Before tokenizer v11: one [TOOL_CALLS] and a JSON list.
  Answer a = parse_every_way(options("mistral"),
                             "[TOOL_CALLS] [{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Paris, "
                             "France\", \"format\": \"celsius\"}}, {\"name\": \"noop\", \"arguments\": {}}]");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0].arguments, (Json{{"location", "Paris, France"}, {"format", "celsius"}}));
  EXPECT_EQ(a.calls[1], (Call{"noop", Json::object()}));
  // v11 and later: name[ARGS]{...} (or name{...}) after each [TOOL_CALLS].
  a = parse_every_way(
      options("mistral"),
      "Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Lyon\"}[TOOL_CALLS]get_time{\"tz\": \"CET\"}");
  EXPECT_EQ(a.content, "Checking.");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0], (Call{"get_weather", Json{{"city", "Lyon"}}}));
  EXPECT_EQ(a.calls[1], (Call{"get_time", Json{{"tz", "CET"}}}));
}

TEST_F(AutoToolChoice, MistralCallIdsAreNineAlphanumerics) {
  ChatOutputOptions o = options("mistral");
  const std::string id = o.tool_parser->make_call_id("0123456789abcdef0123456789abcdef");
  EXPECT_EQ(id.size(), 9u);
  EXPECT_TRUE(std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }));
  EXPECT_EQ(options("hermes").tool_parser->make_call_id("ab12"), "chatcmpl-tool-ab12");
}

TEST_F(AutoToolChoice, PythonicLiterals) {
  const Answer a = parse_every_way(
      options("pythonic"),
      "[get_weather(city='San Francisco', metric=\"celsius\", days=3, hourly=True, tags=['a', \"b\\n\"], "
      "extra={'x': None, 'y': -1.5e2}, pair=(1, 2)), get_time()]");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0].name, "get_weather");
  EXPECT_EQ(a.calls[0].arguments, (Json{{"city", "San Francisco"},
                                        {"metric", "celsius"},
                                        {"days", 3},
                                        {"hourly", true},
                                        {"tags", {"a", "b\n"}},
                                        {"extra", {{"x", nullptr}, {"y", -150.0}}},
                                        {"pair", {1, 2}}}));
  EXPECT_EQ(a.calls[1], (Call{"get_time", Json::object()}));
  EXPECT_EQ(a.content, "");
}

TEST_F(AutoToolChoice, PythonicRefusesWhatIsNotALiteralCall) {
  for (const char* text : {"[f(x)]", "[f(a=b)]", "[f(a=1)] trailing", "[f(a='unterminated)]", "[1, 2, 3]"}) {
    const Answer a = parse_every_way(options("pythonic"), text);
    EXPECT_EQ(a.content, text);
    EXPECT_TRUE(a.calls.empty()) << text;
  }
}

TEST_F(AutoToolChoice, ParallelToolCallsFalseKeepsTheFirstCall) {
  ChatOutputOptions o = options("hermes");
  o.parallel_tool_calls = false;
  const Answer a = parse_every_way(o,
                                   "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": "
                                   "\"b\", \"arguments\": {}}</tool_call>");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].name, "a");
}

TEST(ForcedToolChoice, NamedStreamsItsArguments) {
  ChatOutputOptions o;
  o.tool_choice = ToolChoice::kNamed;
  o.function_name = "get_weather";
  const Answer a = parse_every_way(o, "{\"city\": \"Oslo\"}");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0], (Call{"get_weather", Json{{"city", "Oslo"}}}));
  EXPECT_FALSE(a.chose_tools);  // finish_reason stays the model's own
  EXPECT_EQ(a.content, "");
}

TEST(ForcedToolChoice, RequiredListBecomesCalls) {
  ChatOutputOptions o;
  o.tool_choice = ToolChoice::kRequired;
  Answer a =
      parse_every_way(o, "[{\"name\": \"a\", \"parameters\": {\"k\": \"v\"}}, {\"name\": \"b\", \"parameters\": {}}]");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0], (Call{"a", Json{{"k", "v"}}}));
  EXPECT_TRUE(a.chose_tools);
  // Cut off by max_tokens: what there is stays content.
  a = parse_every_way(o, "[{\"name\": \"a\", \"param");
  EXPECT_TRUE(a.calls.empty());
  EXPECT_EQ(a.content, "[{\"name\": \"a\", \"param");
}

ChatOutputOptions reasoning_options(const std::string& parser, const Json& kwargs = Json::object()) {
  Result<ReasoningFormat> format = reasoning_format(parser, kwargs);
  EXPECT_TRUE(format.is_ok());
  ChatOutputOptions o;
  o.reasoning = *format;
  return o;
}

TEST(Reasoning, DeepSeekR1ThinksUntilTheEndMarker) {
  // R1's template opens <think> in the prompt: the output starts inside it.
  Answer a = parse_every_way(reasoning_options("deepseek_r1"), "9.11 < 9.9 because...</think>\n\n9.9 is larger.");
  EXPECT_EQ(a.reasoning, "9.11 < 9.9 because...");
  EXPECT_EQ(a.content, "\n\n9.9 is larger.");
  a = parse_every_way(reasoning_options("deepseek_r1"), "<think>\nhmm\n</think>ok");
  EXPECT_EQ(a.reasoning, "\nhmm\n");
  EXPECT_EQ(a.content, "ok");
  // Cut off while thinking: all reasoning.
  a = parse_every_way(reasoning_options("deepseek_r1"), "still thinking </thi");
  EXPECT_EQ(a.reasoning, "still thinking </thi");
  EXPECT_EQ(a.content, "");
}

TEST(Reasoning, Qwen3ThinkingSwitchAndToolCallEnd) {
  Answer a = parse_every_way(reasoning_options("qwen3"), "<think>\nThe user greets me.\n</think>\n\nHello!");
  EXPECT_EQ(a.reasoning, "\nThe user greets me.\n");
  EXPECT_EQ(a.content, "\n\nHello!");
  a = parse_every_way(reasoning_options("qwen3", Json{{"enable_thinking", false}}), "<think>\n\n</think>\n\nHello!");
  EXPECT_EQ(a.reasoning, "");
  EXPECT_EQ(a.content, "<think>\n\n</think>\n\nHello!");
  // A tool call ends the thinking without </think>, and is the answer's.
  a = parse_every_way(reasoning_options("qwen3"), "I need the weather.<tool_call>\n{}");
  EXPECT_EQ(a.reasoning, "I need the weather.");
  EXPECT_EQ(a.content, "<tool_call>\n{}");
}

TEST_F(AutoToolChoice, ReasoningThenHermesCalls) {
  ChatOutputOptions o = options("hermes");
  o.reasoning = reasoning_options("qwen3").reasoning;
  const Answer a = parse_every_way(
      o,
      "<think>\nCall the tool.\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>");
  EXPECT_EQ(a.reasoning, "\nCall the tool.\n");
  EXPECT_EQ(a.content, "\n\n");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0], (Call{"f", Json{{"a", 1}}}));
}

TEST(JsonText, PythonDumpsSeparatorsAndEscapes) {
  const OrderedJson v = OrderedJson::parse(R"({"b": [1, 2.5, true, null], "a": "é\n\"\u0001"})");
  EXPECT_EQ(python_json_dumps(v), "{\"b\": [1, 2.5, true, null], \"a\": \"é\\n\\\"\\u0001\"}");
}

TEST(ToolRequest, RequiredSchemaHoistsDefsAndHonoursParallelToolCalls) {
  const OrderedJson body = OrderedJson::parse(R"({
    "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object",
               "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {"type": "integer"}}}}},
              {"type": "function", "function": {"name": "b"}}],
    "tool_choice": "required", "parallel_tool_calls": false})");
  Result<ToolRequest> request = read_tool_request(body);
  ASSERT_TRUE(request.is_ok()) << request.status().message();
  Result<std::optional<structured::StructuredOutputSpec>> spec = tool_choice_constraint(*request);
  ASSERT_TRUE(spec.is_ok() && spec->has_value());
  const Json schema = Json::parse((*spec)->source);
  EXPECT_EQ(schema["$defs"], (Json{{"P", {{"type", "integer"}}}}));
  EXPECT_EQ(schema["maxItems"], 1);
  EXPECT_EQ(schema["minItems"], 1);
  const Json& branches = schema["items"]["anyOf"];
  ASSERT_EQ(branches.size(), 2u);
  EXPECT_FALSE(branches[0]["properties"]["parameters"].contains("$defs"));
  EXPECT_EQ(branches[1]["properties"]["name"]["enum"], Json::array({"b"}));
  EXPECT_EQ(branches[1]["properties"]["parameters"], (Json{{"type", "object"}, {"properties", Json::object()}}));
}

TEST(ToolRequest, DefaultsAndRefusals) {
  auto read = [](const char* text) { return read_tool_request(OrderedJson::parse(text)); };
  EXPECT_EQ(read(R"({"tools": [{"type": "function", "function": {"name": "f"}}]})")->choice, ToolChoice::kAuto);
  EXPECT_EQ(read(R"({})")->choice, ToolChoice::kNone);
  EXPECT_EQ(read(R"({"tools": [], "tool_choice": "required"})")->choice, ToolChoice::kNone);
  EXPECT_EQ(read(R"({"tool_choice": "required"})").status().param(), "tool_choice");
  EXPECT_EQ(read(R"({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "sometimes"})")
                .status()
                .param(),
            "tool_choice");
  EXPECT_EQ(read(R"({"tools": [{"type": "function", "function": {"name": "f"}}],
                     "tool_choice": {"type": "function", "function": {"name": "g"}}})")
                .status()
                .param(),
            "tool_choice");
  EXPECT_EQ(read(R"({"tools": [{"type": "function", "function": {"parameters": {}}}]})").status().param(), "tools");
  EXPECT_EQ(read(R"({"tools": [{"type": "retrieval"}]})").status().param(), "tools");
}

}  // namespace
}  // namespace vllm::api
