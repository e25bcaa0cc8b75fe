// benchmark_serving's arithmetic: numpy-style percentiles, TPOT and
// throughputs from hand-made request results.
#include "bench/serving_metrics.h"

#include <gtest/gtest.h>

namespace vllm::bench {
namespace {

TEST(ServingMetricsTest, PercentilesInterpolateLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4] ms, [50, 90, 99]) = 2.5, 3.7, 3.97; std (population) = 1.118.
  const LatencyStats s = summarize({0.001, 0.002, 0.003, 0.004});
  EXPECT_NEAR(s.mean, 2.5, 1e-9);
  EXPECT_NEAR(s.median, 2.5, 1e-9);
  EXPECT_NEAR(s.p90, 3.7, 1e-9);
  EXPECT_NEAR(s.p99, 3.97, 1e-9);
  EXPECT_NEAR(s.std, 1.118033988749895, 1e-9);
  EXPECT_EQ(summarize({}).p99, 0.0);
}

TEST(ServingMetricsTest, SummaryFollowsBenchmarkServingDefinitions) {
  RequestResult a;
  a.success = true;
  a.prompt_tokens = 10;
  a.output_tokens = 5;
  a.ttft = 0.1;
  a.e2el = 0.5;  // TPOT = (0.5 - 0.1) / 4 = 0.1
  a.itl = {0.1, 0.1, 0.1, 0.1};
  RequestResult b = a;
  b.output_tokens = 1;  // no TPOT for a one-token request
  b.itl.clear();
  b.e2el = 0.1;
  RequestResult failed;
  failed.prompt_tokens = 99;
  const BenchmarkSummary s = summarize_benchmark({a, b, failed}, 2.0);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.total_input_tokens, 20);  // failed requests count in neither
  EXPECT_EQ(s.total_output_tokens, 6);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 3.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 13.0);
  EXPECT_NEAR(s.tpot.mean, 100.0, 1e-9);
  EXPECT_NEAR(s.itl.mean, 100.0, 1e-9);
  EXPECT_NEAR(s.ttft.mean, 100.0, 1e-9);
  EXPECT_NEAR(s.e2el.mean, 300.0, 1e-9);
  const OrderedJson j = summary_json(s);
  for (const char* key : {"completed", "failed", "duration", "request_throughput", "output_throughput",
                          "total_token_throughput", "mean_ttft_ms", "median_tpot_ms", "p90_itl_ms", "p99_e2el_ms"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

}  // namespace
}  // namespace vllm::bench
