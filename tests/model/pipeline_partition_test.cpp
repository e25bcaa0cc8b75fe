// Pipeline stages' layer ranges as vLLM's get_pp_indices makes them.
#include <gtest/gtest.h>

#include "model/layers/pipeline_stage.h"

namespace vllm {
namespace {

std::vector<int64_t> split(int64_t layers, int stages, const std::string& partition = "") {
  Result<std::vector<int64_t>> r = pipeline_partition(layers, stages, partition);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? *r : std::vector<int64_t>{};
}

TEST(PipelinePartitionTest, RemainderGoesToTheStagesBeforeTheLastWalkingBack) {
  EXPECT_EQ(split(32, 4), (std::vector<int64_t>{8, 8, 8, 8}));
  EXPECT_EQ(split(30, 4), (std::vector<int64_t>{7, 8, 8, 7}));
  EXPECT_EQ(split(10, 4), (std::vector<int64_t>{2, 3, 3, 2}));
  EXPECT_EQ(split(61, 2), (std::vector<int64_t>{31, 30}));  // DeepSeek-V3 in two stages, as vLLM logs it
  EXPECT_EQ(split(32, 3), (std::vector<int64_t>{11, 11, 10}));
  EXPECT_EQ(split(11, 4), (std::vector<int64_t>{3, 3, 3, 2}));
}

TEST(PipelinePartitionTest, VllmPpLayerPartitionIsTakenAsGivenOrRefused) {
  EXPECT_EQ(split(20, 4, "4,6,6,4"), (std::vector<int64_t>{4, 6, 6, 4}));
  for (const char* bad : {"4,6,6", "4,6,6,5", "4,x,6,4", "4,,6,4", "-1,7,7,7"}) {
    EXPECT_FALSE(pipeline_partition(20, 4, bad).is_ok()) << bad;
  }
}

}  // namespace
}  // namespace vllm
