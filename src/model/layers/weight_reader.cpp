#include "model/layers/weight_reader.h"

#include <algorithm>
#include <cstring>

#include "base/logging.h"

namespace vllm {
namespace {

bool whole(const MatrixShard& shard) {
  return shard.cols.whole() &&
         std::all_of(shard.rows.begin(), shard.rows.end(), [](const IndexRange& r) { return r.whole(); });
}

// Of a checkpoint matrix t [rows, cols], the rows and columns a shard reads:
// rows by pointer (they are contiguous), columns copied into `copy`.
Tensor shard_of(const Tensor& t, const IndexRange& rows, const IndexRange& cols, std::vector<uint8_t>& copy) {
  const int64_t num_rows = rows.size_of(t.dim(0)), num_cols = cols.size_of(t.dim(1));
  const size_t element = dtype_size(t.dtype);
  const auto* first_row = static_cast<const uint8_t*>(t.data) + static_cast<size_t>(rows.first * t.dim(1)) * element;
  if (cols.whole()) return {first_row, t.dtype, {num_rows, num_cols}};
  copy.resize(static_cast<size_t>(num_rows * num_cols) * element);
  for (int64_t r = 0; r < num_rows; ++r) {
    std::memcpy(copy.data() + static_cast<size_t>(r * num_cols) * element,
                first_row + static_cast<size_t>(r * t.dim(1) + cols.first) * element,
                static_cast<size_t>(num_cols) * element);
  }
  return {copy.data(), t.dtype, {num_rows, num_cols}};
}

// Why a quantized matrix cannot be split by its inputs at `cols` (its
// columns_separable() says it cannot).
std::string cut_groups(const kernels::GroupQuantized& q, const IndexRange& cols, int64_t num_cols) {
  const std::string share = ": a tensor-parallel rank's share of its inputs, columns [" + std::to_string(cols.first) +
                            ", " + std::to_string(cols.first + cols.size_of(num_cols)) + "), ";
  if (!q.input_order.empty()) {
    return share + "is scattered over its act-order (desc_act) groups; such a checkpoint runs with " +
           "--tensor-parallel-size 1";
  }
  const int64_t group = q.group_size * std::max<int64_t>(q.super_groups, 1);
  return share + "cuts its quantization groups of " + std::to_string(group) +
         " inputs; use a --tensor-parallel-size that leaves each rank whole groups";
}

}  // namespace

Result<Tensor> SourceWeightReader::checked(const std::string& name, const std::vector<int64_t>& shape) const {
  VLLM_ASSIGN_OR_RETURN(Tensor t, source_.get(name));
  const std::string where = source_.source() + ": tensor '" + name + "'";
  if (!is_float_dtype(t.dtype)) {
    return invalid_argument(where + ": dtype " + dtype_name(t.dtype) + " is not a float type (F32, BF16, F16)");
  }
  if (t.shape != shape) {
    return invalid_argument(where + ": expected shape " + shape_to_string(shape) + " from config.json, found " +
                            shape_to_string(t.shape));
  }
  return t;
}

Result<kernels::PackedMatrix> SourceWeightReader::matrix_shards(const std::vector<std::string>& names,
                                                                const std::vector<int64_t>& rows, int64_t cols,
                                                                const MatrixShard& shard) {
  VLLM_CHECK(shard.rows.empty() || shard.rows.size() == names.size(), "a row range for each stacked part");
  // Quantized matrices stay quantized when every stacked part is (a dense
  // one beside them makes them all dense: get() dequantizes).
  std::vector<kernels::GroupQuantized> quantized;
  for (size_t i = 0; i < names.size(); ++i) {
    VLLM_ASSIGN_OR_RETURN(std::optional<kernels::GroupQuantized> q, source_.quantized(names[i]));
    if (!q) break;
    const std::string where = source_.source() + ": tensor '" + names[i] + "'";
    if (q->rows != rows[i] || q->cols != cols) {
      return invalid_argument(where + ": expected shape " + shape_to_string({rows[i], cols}) +
                              " from config.json, found " + shape_to_string({q->rows, q->cols}));
    }
    if (!whole(shard)) {
      const IndexRange part_rows = shard.rows.empty() ? IndexRange{} : shard.rows[i];
      const int64_t first_col = shard.cols.first, num_cols = shard.cols.size_of(cols);
      if (!q->columns_separable(first_col, num_cols)) return invalid_argument(where + cut_groups(*q, shard.cols, cols));
      q = std::move(*q).part(part_rows.first, part_rows.size_of(rows[i]), first_col, num_cols);
    }
    // Parts that gather or quantize their inputs differently cannot share one input.
    if (!quantized.empty() &&
        (q->input_order != quantized[0].input_order || q->int8_activations != quantized[0].int8_activations)) {
      break;
    }
    quantized.push_back(std::move(*q));
  }
  if (quantized.size() == names.size()) {
    std::vector<const kernels::GroupQuantized*> parts;
    for (const kernels::GroupQuantized& q : quantized) parts.push_back(&q);
    return quantized[0].int8_activations ? kernels::pack_int8_dot_matrices(parts, pool_)
                                         : kernels::pack_quantized_matrices(parts, pool_);
  }
  std::vector<Tensor> parts;
  std::vector<std::vector<uint8_t>> copies(names.size());  // of column shards
  for (size_t i = 0; i < names.size(); ++i) {
    VLLM_ASSIGN_OR_RETURN(Tensor t, checked(names[i], {rows[i], cols}));
    if (!parts.empty() && t.dtype != parts[0].dtype) {
      return invalid_argument(source_.source() + ": tensor '" + names[i] + "' is " + dtype_name(t.dtype) + " but '" +
                              names[0] + "' is " + dtype_name(parts[0].dtype) + ": they must share a dtype");
    }
    parts.push_back(shard_of(t, shard.rows.empty() ? IndexRange{} : shard.rows[i], shard.cols, copies[i]));
  }
  return kernels::pack_stacked_matrices(parts, pool_);
}

Result<std::vector<kernels::PackedMatrix>> SourceWeightReader::row_blocks(const std::string& name, int64_t num_blocks,
                                                                          int64_t block_rows, int64_t cols,
                                                                          int64_t first, int64_t count, bool transpose,
                                                                          const IndexRange& blocks) {
  VLLM_CHECK(first >= 0 && first + count <= block_rows, "row_blocks: rows outside the block");
  VLLM_ASSIGN_OR_RETURN(const Tensor t, checked(name, {num_blocks * block_rows, cols}));
  const size_t element = dtype_size(t.dtype);
  const auto* bytes = static_cast<const uint8_t*>(t.data);
  std::vector<uint8_t> part(static_cast<size_t>(count * cols) * element);
  std::vector<kernels::PackedMatrix> out;
  for (int64_t b = blocks.first; b < blocks.first + blocks.size_of(num_blocks); ++b) {
    for (int64_t r = 0; r < count; ++r) {
      const uint8_t* row = bytes + static_cast<size_t>((b * block_rows + first + r) * cols) * element;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t at = transpose ? c * count + r : r * cols + c;
        std::memcpy(part.data() + static_cast<size_t>(at) * element, row + static_cast<size_t>(c) * element, element);
      }
    }
    const Tensor view{part.data(), t.dtype,
                      transpose ? std::vector<int64_t>{cols, count} : std::vector<int64_t>{count, cols}};
    out.push_back(kernels::pack_matrix(view, pool_));
  }
  return out;
}

Result<std::vector<float>> SourceWeightReader::vector_shards(const std::vector<std::string>& names,
                                                             const std::vector<int64_t>& n, WeightKind,
                                                             const std::vector<IndexRange>& ranges) {
  VLLM_CHECK(ranges.empty() || ranges.size() == names.size(), "a range for each vector");
  std::vector<float> out;
  for (size_t part = 0; part < names.size(); ++part) {
    VLLM_ASSIGN_OR_RETURN(Tensor t, checked(names[part], {n[part]}));  // a float type
    const std::vector<float> values = widened_values(t);
    const IndexRange range = ranges.empty() ? IndexRange{} : ranges[part];
    const auto first = values.begin() + range.first;
    out.insert(out.end(), first, first + range.size_of(n[part]));
  }
  return out;
}

Result<std::optional<float>> SourceWeightReader::scalar_if_present(const std::string& name) {
  if (!source_.has(name)) return std::optional<float>{};
  VLLM_ASSIGN_OR_RETURN(const Tensor t, source_.get(name));
  const bool one_value = std::all_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d == 1; });
  if (!one_value || !is_float_dtype(t.dtype)) {
    return invalid_argument(source_.source() + ": tensor '" + name + "' is " + dtype_name(t.dtype) + " " +
                            shape_to_string(t.shape) + ", expected one value of a float type (F32, BF16, F16)");
  }
  return std::optional<float>{widened_values(t)[0]};
}

Result<kernels::PackedMatrix> WeightLister::matrix_shards(const std::vector<std::string>& names,
                                                          const std::vector<int64_t>& rows, int64_t cols,
                                                          const MatrixShard&) {
  for (size_t i = 0; i < names.size(); ++i) specs.push_back({names[i], {rows[i], cols}, WeightKind::kMatrix});
  return kernels::PackedMatrix{};
}

Result<std::vector<kernels::PackedMatrix>> WeightLister::row_blocks(const std::string& name, int64_t num_blocks,
                                                                    int64_t block_rows, int64_t cols, int64_t, int64_t,
                                                                    bool, const IndexRange& blocks) {
  // Listed once however many slices of it are taken.
  if (std::none_of(specs.begin(), specs.end(), [&](const WeightSpec& s) { return s.name == name; })) {
    specs.push_back({name, {num_blocks * block_rows, cols}, WeightKind::kMatrix});
  }
  return std::vector<kernels::PackedMatrix>(static_cast<size_t>(blocks.size_of(num_blocks)));
}

Result<std::vector<float>> WeightLister::vector_shards(const std::vector<std::string>& names,
                                                       const std::vector<int64_t>& n, WeightKind kind,
                                                       const std::vector<IndexRange>&) {
  for (size_t i = 0; i < names.size(); ++i) specs.push_back({names[i], {n[i]}, kind});
  return std::vector<float>{};
}

}  // namespace vllm
