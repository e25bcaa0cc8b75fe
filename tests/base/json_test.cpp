#include "base/json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace vllm {
namespace {

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string error_of(const std::string& text, const JsonLimits& limits = {}) {
  Result<Json> r = parse_json_within(text, limits);
  return r.is_ok() ? "" : r.status().message();
}

TEST(JsonLimitsTest, DepthUpToTheLimitParsesOneMoreIsRefused) {
  const JsonLimits limits{.max_depth = 8};
  EXPECT_EQ(error_of(nested_arrays(8), limits), "");
  EXPECT_EQ(error_of(nested_arrays(9), limits), "JSON with arrays and objects nested deeper than the limit of 8");
  EXPECT_EQ(error_of(R"({"a": {"b": {"c": [1]}}})", {.max_depth = 3}),
            "JSON with arrays and objects nested deeper than the limit of 3");
}

TEST(JsonLimitsTest, HostileNestingIsRefusedWithoutBuildingIt) {
  // 16 MB of '[' (the body limit): refused at the 65th byte, in no time and no memory.
  const std::string text(16 << 20, '[');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of(text), "JSON with arrays and objects nested deeper than the limit of 64");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  // 100,000 levels of a message's content: the same.
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": )" + nested_arrays(100000) + "}]}"),
            "JSON with arrays and objects nested deeper than the limit of 64");
}

TEST(JsonLimitsTest, StringsArraysObjectsAndValuesAreBounded) {
  EXPECT_EQ(error_of(R"(["abcd"])", {.max_string_bytes = 4}), "");
  EXPECT_EQ(error_of(R"(["abcde"])", {.max_string_bytes = 4}), "JSON with a string longer than the limit of 4 bytes");
  EXPECT_EQ(error_of(R"({"abcde": 1})", {.max_string_bytes = 4}), "JSON with a key longer than the limit of 4 bytes");
  EXPECT_EQ(error_of("[1, 2, 3]", {.max_array_items = 3}), "");
  EXPECT_EQ(error_of("[1, [2], 3, 4]", {.max_array_items = 3}), "JSON with an array of more items than the limit of 3");
  EXPECT_EQ(error_of(R"({"a": 1, "b": 2})", {.max_object_members = 2}), "");
  EXPECT_EQ(error_of(R"({"a": 1, "b": 2, "c": 3})", {.max_object_members = 2}),
            "JSON with an object with more members than the limit of 2");
  // Containers count as values: [[1], [2]] holds five.
  EXPECT_EQ(error_of("[[1], [2]]", {.max_values = 5}), "");
  EXPECT_EQ(error_of("[[1], [2, 3]]", {.max_values = 5}), "JSON with more values than the limit of 5");
}

TEST(JsonLimitsTest, WithinLimitsTheDocumentIsTheSameAsAPlainParse) {
  const std::string text = R"({"b": [1, 2.5, "x", null, true], "a": {"c": {}}, "u": 18446744073709551615})";
  Result<Json> bounded = parse_json_within(text, {});
  ASSERT_TRUE(bounded.is_ok());
  EXPECT_EQ(*bounded, Json::parse(text));
}

TEST(JsonLimitsTest, SyntaxErrorsSayWhere) {
  EXPECT_TRUE(error_of("{\"a\": }").starts_with("not valid JSON (parse error at line 1, column 7"))
      << error_of("{\"a\": }");
  EXPECT_TRUE(error_of("").starts_with("not valid JSON")) << error_of("");
  EXPECT_TRUE(error_of("[1] x").starts_with("not valid JSON")) << error_of("[1] x");
}

TEST(ToOrderedJsonTest, KeepsEveryValueAndIsLinearInTheNumberOfKeys) {
  const Json j = Json::parse(R"({"z": [1, {"y": "s"}], "a": null, "m": 1.5})");
  const OrderedJson o = to_ordered_json(j);
  EXPECT_EQ(o.dump(), j.dump());  // same keys in the same (sorted) order, same values
  Json wide = Json::object();
  for (int i = 0; i < 200000; ++i) wide[std::to_string(i)] = i;
  const auto start = std::chrono::steady_clock::now();
  const OrderedJson wide_ordered = to_ordered_json(wide);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));  // keyed inserts: minutes
  EXPECT_EQ(wide_ordered.size(), 200000u);
  EXPECT_EQ(wide_ordered["199999"], 199999);
}

}  // namespace
}  // namespace vllm
