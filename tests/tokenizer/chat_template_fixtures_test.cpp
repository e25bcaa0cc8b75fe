// Every record of ../shared/fixtures/chat_templates/<family>.jsonl: the
// rendered prompt (or the template's error) and its token ids, as Hugging
// Face renders them.  Skipped when ../shared is not there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/json.h"
#include "test_util.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace vllm {
namespace {

class ChatTemplateFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateFixtureTest, RendersEveryRecordExactly) {
  const std::string family = GetParam();
  const std::string path = testing::shared_dir() + "/fixtures/chat_templates/" + family + ".jsonl";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  const std::string dir = family == "stories260k" ? testing::shared_dir() + "/models/stories260k"
                                                  : testing::shared_dir() + "/tokenizers/" + family;
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(dir);
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  ASSERT_TRUE((*tok)->chat_template().has_value());
  Result<ChatTemplate> tmpl = ChatTemplate::compile(*(*tok)->chat_template());
  ASSERT_TRUE(tmpl.is_ok()) << tmpl.status().message();
  std::ifstream in(path);
  int records = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const OrderedJson r = OrderedJson::parse(line);
    ++records;
    Result<std::string> rendered = tmpl->render(r["messages"], r["add_generation_prompt"].get<bool>(), r["context"]);
    if (r.contains("error")) {
      ASSERT_FALSE(rendered.is_ok()) << family << " record " << r["index"];
      EXPECT_EQ(rendered.status().message(), r["error"].get<std::string>());
      continue;
    }
    ASSERT_TRUE(rendered.is_ok()) << family << " record " << r["index"] << ": " << rendered.status().message();
    EXPECT_EQ(*rendered, r["rendered"].get<std::string>())
        << family << " record " << r["index"] << " (" << r["name"] << ")";
    EXPECT_EQ((*tok)->encode(*rendered, false), r["ids"].get<std::vector<int32_t>>())
        << family << " record " << r["index"];
  }
  EXPECT_GT(records, 10);
}

INSTANTIATE_TEST_SUITE_P(Families, ChatTemplateFixtureTest,
                         ::testing::Values("stories260k", "llama3", "qwen3", "gemma3"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace vllm
