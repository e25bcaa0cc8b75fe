// How a layer takes its weights: by name and expected shape, from a
// WeightSource (each tensor checked for presence, shape and dtype, matrices
// packed into the kernels' layout, small vectors widened to float32), or
// from nowhere, to list what an architecture needs (make-test-model writes
// exactly that list).  A layer describes its weights once, for both.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/packed_matrix.h"
#include "model/layers/pipeline_stage.h"
#include "model/layers/tensor_parallel.h"
#include "model/loader/weight_source.h"

namespace vllm {

enum class WeightKind { kMatrix, kNorm, kBias };

struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  WeightKind kind;
};

// What one rank of a tensor-parallel group reads of stacked checkpoint
// matrices: of each part, the rows rows[i] (none given: all), and of every
// part the columns `cols`.
struct MatrixShard {
  std::vector<IndexRange> rows;
  IndexRange cols;
};

class WeightReader {
 public:
  virtual ~WeightReader() = default;
  // Checkpoint matrices [rows[i], cols] (their whole shapes), of which
  // `shard`'s parts are stacked by rows into one (q, k and v read together;
  // a fused checkpoint tensor is the one-part case).
  virtual Result<kernels::PackedMatrix> matrix_shards(const std::vector<std::string>& names,
                                                      const std::vector<int64_t>& rows, int64_t cols,
                                                      const MatrixShard& shard) = 0;
  // A checkpoint matrix [num_blocks * block_rows, cols] whose rows are
  // blocks (heads' parts, stacked): of each of the blocks `blocks` (whole:
  // every one; a tensor-parallel rank's heads), the `count` rows from
  // `first`, packed alone as [count, cols], or as its transpose [cols,
  // count] (DeepSeek's kv_b_proj, split into per-head up-projections).
  virtual Result<std::vector<kernels::PackedMatrix>> row_blocks(const std::string& name, int64_t num_blocks,
                                                                int64_t block_rows, int64_t cols, int64_t first,
                                                                int64_t count, bool transpose,
                                                                const IndexRange& blocks) = 0;
  // Checkpoint vectors [n[i]], of each the elements ranges[i] (none given:
  // all), concatenated.
  virtual Result<std::vector<float>> vector_shards(const std::vector<std::string>& names, const std::vector<int64_t>& n,
                                                   WeightKind kind, const std::vector<IndexRange>& ranges) = 0;
  // A checkpoint tensor of one value (of any shape of ones, [] included, of
  // a float dtype) that a layer may go without: nullopt where it is absent.
  virtual Result<std::optional<float>> scalar_if_present(const std::string& name) = 0;

  Result<kernels::PackedMatrix> matrices(const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                                         int64_t cols) {
    return matrix_shards(names, rows, cols, {});
  }
  Result<kernels::PackedMatrix> matrix(const std::string& name, int64_t rows, int64_t cols) {
    return matrices({name}, {rows}, cols);
  }
  Result<std::vector<float>> vectors(const std::vector<std::string>& names, const std::vector<int64_t>& n,
                                     WeightKind kind) {
    return vector_shards(names, n, kind, {});
  }
  Result<std::vector<float>> vector(const std::string& name, int64_t n, WeightKind kind) {
    return vectors({name}, {n}, kind);
  }

  // The group the layers read for are split across (none: whole layers).
  const TensorParallel& tensor_parallel() const { return tensor_parallel_; }
  void set_tensor_parallel(const TensorParallel& tp) { tensor_parallel_ = tp; }
  // The pipeline stage the layers are read for: its layers only, the
  // embedding on the first stage, the final norm and LM head on the last.
  const PipelineStage& pipeline_stage() const { return pipeline_stage_; }
  void set_pipeline_stage(const PipelineStage& stage) { pipeline_stage_ = stage; }

 private:
  TensorParallel tensor_parallel_;
  PipelineStage pipeline_stage_;
};

// Reads from a source, packing matrices over `pool`.
class SourceWeightReader : public WeightReader {
 public:
  SourceWeightReader(const WeightSource& source, ThreadPool& pool) : source_(source), pool_(pool) {}

  Result<kernels::PackedMatrix> matrix_shards(const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                                              int64_t cols, const MatrixShard& shard) override;
  Result<std::vector<kernels::PackedMatrix>> row_blocks(const std::string& name, int64_t num_blocks, int64_t block_rows,
                                                        int64_t cols, int64_t first, int64_t count, bool transpose,
                                                        const IndexRange& blocks) override;
  Result<std::vector<float>> vector_shards(const std::vector<std::string>& names, const std::vector<int64_t>& n,
                                           WeightKind kind, const std::vector<IndexRange>& ranges) override;
  Result<std::optional<float>> scalar_if_present(const std::string& name) override;

 private:
  Result<Tensor> checked(const std::string& name, const std::vector<int64_t>& shape) const;

  const WeightSource& source_;
  ThreadPool& pool_;
};

// Reads nothing: records every weight asked for, and gives empty ones back.
class WeightLister : public WeightReader {
 public:
  Result<kernels::PackedMatrix> matrix_shards(const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                                              int64_t cols, const MatrixShard& shard) override;
  Result<std::vector<kernels::PackedMatrix>> row_blocks(const std::string& name, int64_t num_blocks, int64_t block_rows,
                                                        int64_t cols, int64_t first, int64_t count, bool transpose,
                                                        const IndexRange& blocks) override;
  Result<std::vector<float>> vector_shards(const std::vector<std::string>& names, const std::vector<int64_t>& n,
                                           WeightKind kind, const std::vector<IndexRange>& ranges) override;
  // Optional weights are not listed (a test model goes without them).
  Result<std::optional<float>> scalar_if_present(const std::string&) override { return std::optional<float>{}; }

  std::vector<WeightSpec> specs;
};

}  // namespace vllm
