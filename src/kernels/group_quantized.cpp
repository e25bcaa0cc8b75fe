#include "kernels/group_quantized.h"

#include <algorithm>
#include <cmath>

#include "base/logging.h"
#include "tensor/dtype.h"

namespace vllm::kernels {

float GroupQuantized::value(int64_t row, int64_t col) const {
  const auto g = static_cast<size_t>(row * groups_per_row() + col / group_size);
  const int8_t bits = codes[static_cast<size_t>(row * cols + col)];
  const float code = fp8_codes ? e4m3_to_f32(static_cast<uint8_t>(bits)) : static_cast<float>(bits);
  return offsets.empty() ? scales[g] * code : std::fma(scales[g], code, offsets[g]);
}

void GroupQuantized::dequantize_rows(int64_t row, int64_t count, float* out) const {
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t input = input_order.empty() ? c : input_order[static_cast<size_t>(c)];
      out[r * cols + input] = value(row + r, c);
    }
  }
}

bool GroupQuantized::columns_separable(int64_t first, int64_t count) const {
  if (first == 0 && count == cols) return true;
  if (!input_order.empty()) return false;  // a share of the inputs is scattered over the columns
  if (groups_per_row() == 1 && super_groups <= 1) return true;
  const int64_t unit = group_size * std::max<int64_t>(super_groups, 1);
  return first % unit == 0 && count % unit == 0;
}

namespace {

// Of a [rows, per_row] array, rows [first_row, +num_rows) and columns [first, +count).
template <typename T>
std::vector<T> block_of(const std::vector<T>& v, int64_t per_row, int64_t first_row, int64_t num_rows, int64_t first,
                        int64_t count) {
  if (v.empty()) return {};
  std::vector<T> out;
  out.reserve(static_cast<size_t>(num_rows * count));
  for (int64_t r = first_row; r < first_row + num_rows; ++r) {
    const auto row = v.begin() + r * per_row + first;
    out.insert(out.end(), row, row + count);
  }
  return out;
}

}  // namespace

GroupQuantized GroupQuantized::part(int64_t first_row, int64_t num_rows, int64_t first_col, int64_t num_cols) && {
  VLLM_CHECK(first_row >= 0 && num_rows >= 0 && first_row + num_rows <= rows && first_col >= 0 && num_cols > 0 &&
                 first_col + num_cols <= cols && columns_separable(first_col, num_cols),
             "GroupQuantized::part: rows or columns outside the matrix, or a cut group");
  const int64_t all_cols = cols, groups = groups_per_row();
  const bool one_group = groups == 1;
  const int64_t first_group = one_group ? 0 : first_col / group_size;
  const int64_t num_groups = one_group ? 1 : num_cols / group_size;
  GroupQuantized p = std::move(*this);  // the flags and activation parameters as they are
  p.rows = num_rows;
  p.cols = num_cols;
  if (one_group) p.group_size = num_cols;
  p.codes = block_of(p.codes, all_cols, first_row, num_rows, first_col, num_cols);
  for (std::vector<float>* v : {&p.scales, &p.offsets})
    *v = block_of(*v, groups, first_row, num_rows, first_group, num_groups);
  for (std::vector<int8_t>* v : {&p.scale_steps, &p.offset_steps}) {
    *v = block_of(*v, groups, first_row, num_rows, first_group, num_groups);
  }
  if (p.super_groups > 0) {
    const int64_t supers = groups / p.super_groups;
    const int64_t first_super = first_group / p.super_groups;
    const int64_t num_supers = std::max<int64_t>(num_groups / p.super_groups, 1);
    for (std::vector<float>* v : {&p.scale_bases, &p.offset_bases}) {
      *v = block_of(*v, supers, first_row, num_rows, first_super, num_supers);
    }
  }
  return p;
}

}  // namespace vllm::kernels
