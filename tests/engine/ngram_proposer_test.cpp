// The n-gram proposer's matching rule, as vLLM's prompt lookup has it.
#include "engine/spec/ngram_proposer.h"

#include <gtest/gtest.h>

namespace vllm {
namespace {

using Tokens = std::vector<int32_t>;

TEST(NgramDraftsTest, ProposesWhatFollowedTheLongestRecurringSuffix) {
  // vLLM's own example: the suffix [2, 3] recurs at 1, after it come 4 2 3 (fewer than k: the sequence ends).
  EXPECT_EQ(ngram_drafts(Tokens{1, 2, 3, 4, 2, 3}, 2, 3, 4), (Tokens{4, 2, 3}));
  // The three-token suffix 7 8 9 recurs: it wins over the two-token 8 9 that recurs earlier.
  EXPECT_EQ(ngram_drafts(Tokens{8, 9, 1, 7, 8, 9, 2, 5, 7, 8, 9}, 2, 3, 2), (Tokens{2, 5}));
  // k caps the drafts.
  EXPECT_EQ(ngram_drafts(Tokens{1, 2, 3, 4, 5, 6, 1, 2}, 2, 2, 3), (Tokens{3, 4, 5}));
}

TEST(NgramDraftsTest, OfEqualMatchesTheEarliestWins) {
  EXPECT_EQ(ngram_drafts(Tokens{5, 1, 5, 2, 5, 3, 5}, 1, 1, 1), (Tokens{1}));
}

TEST(NgramDraftsTest, MatchesMayOverlapTheSuffix) {
  // 7 7 7 7: the suffix 7 7 7 recurs at 0, overlapping it; the token after is 7.
  EXPECT_EQ(ngram_drafts(Tokens{7, 7, 7, 7}, 3, 3, 2), (Tokens{7}));
}

TEST(NgramDraftsTest, NothingWhenNoSuffixOfMinNRecursOrTheSequenceIsShort) {
  EXPECT_TRUE(ngram_drafts(Tokens{1, 2, 3, 4, 5, 3, 9}, 2, 4, 3).empty());  // 9 alone recurs nowhere; 3 9 neither
  EXPECT_TRUE(ngram_drafts(Tokens{1, 2, 1}, 2, 5, 3).empty());
  EXPECT_TRUE(ngram_drafts(Tokens{4}, 1, 1, 3).empty());
  EXPECT_TRUE(ngram_drafts(Tokens{}, 1, 1, 3).empty());
}

TEST(NgramDraftsTest, LongerThanMaxNIsNotRequired) {
  // The suffix 1 2 3 4 recurs whole, but max_n 2 looks only at 3 4, first seen at 2.
  EXPECT_EQ(ngram_drafts(Tokens{9, 9, 3, 4, 6, 1, 2, 3, 4, 8, 1, 2, 3, 4}, 1, 2, 1), (Tokens{6}));
}

}  // namespace
}  // namespace vllm
