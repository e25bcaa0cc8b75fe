#include "base/status.h"

#include <gtest/gtest.h>

namespace vllm {
namespace {

Result<int> half_of(int x) {
  if (x % 2 != 0) return invalid_argument(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> quarter_of(int x) {
  VLLM_ASSIGN_OR_RETURN(int half, half_of(x));
  return half_of(half);
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*quarter_of(8), 2);
  Result<int> r = quarter_of(6);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "3 is odd");
}

TEST(StatusTest, WithContextPrefixesTheMessage) {
  Status s = not_found("missing").with_context("config.json");
  EXPECT_EQ(s.message(), "config.json: missing");
  EXPECT_TRUE(Status::ok().with_context("x").is_ok());
}

}  // namespace
}  // namespace vllm

namespace vllm {
namespace {

TEST(StatusTest, ParamNamesTheFieldAndSurvivesContext) {
  const Status s = invalid_argument("top_p must be in (0, 1], got 0.").with_param("top_p");
  EXPECT_EQ(s.param(), "top_p");
  EXPECT_EQ(s.with_context("line 3").param(), "top_p");
  EXPECT_EQ(s.with_context("line 3").message(), "line 3: top_p must be in (0, 1], got 0.");
  EXPECT_TRUE(invalid_argument("x").param().empty());
}

}  // namespace
}  // namespace vllm
