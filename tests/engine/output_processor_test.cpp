// Stop strings and streaming in the output processor, fed token by token
// with the real stories260k tokenizer: matches that span tokens and fall
// inside byte-fallback UTF-8 sequences, kept or cut, streamed or not.
#include "engine/output_processor.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace vllm {
namespace {

class OutputProcessorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tokenizer_ = std::move(Tokenizer::load(testing::model_dir())).value().release(); }
  static void TearDownTestSuite() { delete tokenizer_; }

  // The completion after "Once": 日 and 本 are three byte-fallback tokens
  // each, 😀 four; "▁time" "," "▁" and "▁c" "a" "ke" are separate pieces.
  const std::vector<int32_t> prompt_ = {1, 403};
  const std::string full_text_ = " a time, 日本 and 😀 cake";
  std::vector<int32_t> completion() const { return tokenizer_->encode(full_text_.substr(1), false); }

  // What a sequence of the first k completion tokens decodes to.
  std::string decoded(size_t k) const {
    std::vector<int32_t> ids = prompt_;
    const std::vector<int32_t> c = completion();
    ids.insert(ids.end(), c.begin(), c.begin() + static_cast<ptrdiff_t>(k));
    return tokenizer_->decode(ids, true).substr(tokenizer_->decode(prompt_, true).size());
  }

  // <0x00> .. <0xFF> are ids 3 .. 258 in this vocabulary.
  static bool is_byte_token(int32_t id) { return id >= 3 && id < 3 + 256; }

  struct Run {
    std::string text;  // the final output's, or the deltas joined
    std::vector<int32_t> token_ids;
    std::optional<FinishReason> finish_reason;
    StopReason stop_reason;
    size_t tokens_fed = 0;
    bool core_told_to_stop = false;
  };

  // Feeds the completion `tokens_per_step` tokens a step (more than one: as
  // speculative decoding's accepted drafts come) until the processor finishes it.
  Run run(const SamplingParams& base, OutputKind kind, size_t tokens_per_step = 1) const {
    SamplingParams params = base;
    params.output_kind = kind;
    OutputProcessor processor(*tokenizer_);
    processor.add_request("r", prompt_, params, {7});
    const std::vector<int32_t> tokens = completion();
    Run result;
    for (size_t i = 0; i < tokens.size() && !result.finish_reason; i += tokens_per_step) {
      EngineCoreOutput o;
      o.request_id = 7;
      const size_t end = std::min(i + tokens_per_step, tokens.size());
      o.new_token_ids.assign(tokens.begin() + static_cast<ptrdiff_t>(i), tokens.begin() + static_cast<ptrdiff_t>(end));
      o.new_token_logprobs.assign(end - i, -0.5f);
      if (end == tokens.size()) o.finish_reason = FinishReason::kLength;
      OutputProcessor::StepOutputs step = processor.process_outputs({o});
      result.tokens_fed = end;
      result.core_told_to_stop = !step.stopped.empty();
      for (const RequestOutput& out : step.outputs) {
        const CompletionOutput& c = out.outputs.at(0);
        EXPECT_TRUE(c.finish_reason.has_value() == out.finished);
        if (kind == OutputKind::kDelta) {
          result.text += c.text;
          result.token_ids.insert(result.token_ids.end(), c.token_ids.begin(), c.token_ids.end());
        } else {
          result.text = c.text;
          result.token_ids = c.token_ids;
        }
        result.finish_reason = c.finish_reason;
        result.stop_reason = c.stop_reason;
        EXPECT_DOUBLE_EQ(c.cumulative_logprob, -0.5 * static_cast<double>(result.token_ids.size()));
      }
    }
    EXPECT_FALSE(processor.has_request("r"));
    return result;
  }

  static Tokenizer* tokenizer_;
};

Tokenizer* OutputProcessorTest::tokenizer_ = nullptr;

TEST_F(OutputProcessorTest, TheCompletionIsBuiltFromByteFallbackPieces) {
  ASSERT_EQ(decoded(completion().size()), full_text_);
  ASSERT_EQ(completion().size(), 19u);
  SamplingParams p;
  for (OutputKind kind : {OutputKind::kDelta, OutputKind::kCumulative, OutputKind::kFinalOnly}) {
    const Run r = run(p, kind);
    EXPECT_EQ(r.text, full_text_);
    EXPECT_EQ(r.token_ids, completion());
    EXPECT_EQ(r.finish_reason, FinishReason::kLength);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(r.stop_reason));
  }
}

TEST_F(OutputProcessorTest, StopStringsCutTheTextWhereverTheyFall) {
  // Spanning 3 tokens; inside one character's byte tokens; across byte tokens and
  // the next piece; two candidates, the earlier one wins; one inside a single token.
  const std::vector<std::vector<std::string>> cases = {{"time, "}, {"本"}, {"😀 c"}, {"cake", "😀"}, {"nd"}, {"e, 日"}};
  for (const std::vector<std::string>& stops : cases) {
    size_t first = std::string::npos;
    std::string winner;
    for (const std::string& s : stops) {
      if (full_text_.find(s) < first) first = full_text_.find(s), winner = s;
    }
    // The token that completes the match ends the sequence, unless it is a
    // byte-fallback token: a run of those decodes as a whole (one invalid byte
    // turns the run into U+FFFDs), so its text comes when the next piece does.
    const std::vector<int32_t> tokens = completion();
    size_t tokens_needed = 1;
    while (decoded(tokens_needed).find(winner) == std::string::npos) ++tokens_needed;
    while (tokens_needed < tokens.size() && is_byte_token(tokens[tokens_needed - 1])) ++tokens_needed;
    for (bool include : {false, true}) {
      const std::string expected = full_text_.substr(0, first + (include ? winner.size() : 0));
      SamplingParams p;
      p.stop = stops;
      p.include_stop_str_in_output = include;
      for (OutputKind kind : {OutputKind::kDelta, OutputKind::kCumulative, OutputKind::kFinalOnly}) {
        // Three tokens a step: the tokens after the one that completes the match are dropped.
        for (size_t per_step : {1u, 3u}) {
          const Run r = run(p, kind, per_step);
          const std::string label = winner + (include ? " kept" : " cut") + " kind " + std::to_string(int(kind)) +
                                    ", " + std::to_string(per_step) + " a step";
          const size_t tokens_fed = std::min((tokens_needed + per_step - 1) / per_step * per_step, tokens.size());
          EXPECT_EQ(r.text, expected) << label;
          EXPECT_EQ(r.finish_reason, FinishReason::kStop) << label;
          EXPECT_EQ(std::get<std::string>(r.stop_reason), winner) << label;
          EXPECT_EQ(r.tokens_fed, tokens_fed) << label;
          EXPECT_EQ(r.token_ids.size(), tokens_needed) << label;
          EXPECT_EQ(r.core_told_to_stop, tokens_fed < completion().size()) << label;
        }
      }
    }
  }
}

TEST_F(OutputProcessorTest, StopStringsWaitForMinTokens) {
  SamplingParams p;
  p.stop = {"a"};
  p.min_tokens = 3;  // " a time ," are the first three: the "a" of " and" is the first one looked for
  for (OutputKind kind : {OutputKind::kDelta, OutputKind::kFinalOnly}) {
    const Run r = run(p, kind);
    EXPECT_EQ(r.text, " a time, 日本 ");
    EXPECT_EQ(std::get<std::string>(r.stop_reason), "a");
  }
}

TEST_F(OutputProcessorTest, StopTokenIdsAreReportedAndTheirTextKept) {
  SamplingParams p;
  OutputProcessor processor(*tokenizer_);
  p.output_kind = OutputKind::kFinalOnly;
  processor.add_request("r", prompt_, p, {3});
  EngineCoreOutput o;
  o.request_id = 3;
  o.new_token_ids = {378};  // "▁time"
  o.new_token_logprobs = {-1.0f};
  o.finish_reason = FinishReason::kStop;
  o.stop_token_id = 378;
  const std::vector<RequestOutput> outs = processor.process_outputs({o}).outputs;
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].outputs[0].text, " time");
  EXPECT_EQ(std::get<int32_t>(outs[0].outputs[0].stop_reason), 378);
}

TEST_F(OutputProcessorTest, SequencesOfOneRequestAreGatheredByIndex) {
  SamplingParams p;
  p.n = 2;
  for (OutputKind kind : {OutputKind::kFinalOnly, OutputKind::kDelta}) {
    p.output_kind = kind;
    OutputProcessor processor(*tokenizer_);
    processor.add_request("r", prompt_, p, {10, 11});
    auto output = [](RequestId id, int32_t token, bool last) {
      EngineCoreOutput o;
      o.request_id = id;
      o.new_token_ids = {token};
      o.new_token_logprobs = {0.0f};
      if (last) o.finish_reason = FinishReason::kLength;
      return o;
    };
    // Sequence 1 finishes first; the request only when both have.
    std::vector<RequestOutput> step1 =
        processor.process_outputs({output(11, 378, true), output(10, 261, false)}).outputs;
    std::vector<RequestOutput> step2 = processor.process_outputs({output(10, 378, true)}).outputs;
    if (kind == OutputKind::kFinalOnly) {
      EXPECT_TRUE(step1.empty());
      ASSERT_EQ(step2.size(), 1u);
      ASSERT_EQ(step2[0].outputs.size(), 2u);
      EXPECT_EQ(step2[0].outputs[0].index, 0);
      EXPECT_EQ(step2[0].outputs[0].text, " a time");
      EXPECT_EQ(step2[0].outputs[1].index, 1);
      EXPECT_EQ(step2[0].outputs[1].text, " time");
      EXPECT_TRUE(step2[0].finished);
    } else {
      ASSERT_EQ(step1.size(), 2u);
      EXPECT_EQ(step1[0].outputs[0].index, 1);
      EXPECT_FALSE(step1[0].finished);                // its sibling still runs
      EXPECT_EQ(step1[0].prompt_token_ids, prompt_);  // the stream's first output carries the prompt
      EXPECT_TRUE(step1[1].prompt_token_ids.empty());
      ASSERT_EQ(step2.size(), 1u);
      EXPECT_EQ(step2[0].outputs[0].index, 0);
      EXPECT_EQ(step2[0].outputs[0].text, " time");
      EXPECT_TRUE(step2[0].finished);
    }
  }
}

}  // namespace
}  // namespace vllm
