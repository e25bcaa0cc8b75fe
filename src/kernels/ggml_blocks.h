// The tensor types of ggml (llama.cpp's GGUF files): their numbers as the
// files store them, their block geometry, and their dequantization to FP32.
//
// A quantized row is a run of blocks; each block holds `block_elements`
// consecutive values of the row in `block_bytes` bytes (FP16 scales and
// packed integers).  dequantize_ggml_row is the definition: it gives the
// bits ggml's own dequantization gives (the same FP32 operations in the same
// order), and is the oracle for faster paths.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vllm::kernels {

// Values as in ggml.h's enum ggml_type (the numbers a GGUF file stores).
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;  // ggml's spelling: "Q4_K", "BF16", ...
  int64_t block_elements;
  int64_t block_bytes;
};

// The type stored as `number`, if we read it; otherwise nullopt.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t number);
// ggml's name of a type number we do not read (for the error that names it),
// or "type <number>" when it is not one of ggml's.
std::string ggml_type_name(uint32_t number);

// Bytes of a row of `elements` values (a multiple of the block size).
inline int64_t ggml_row_bytes(const GgmlTypeInfo& info, int64_t elements) {
  return elements / info.block_elements * info.block_bytes;
}

// A quantized type's group form (group_quantized.h): values per group (32,
// or 16 for Q2_K, Q3_K and Q6_K; 0 for F32, F16 and BF16), and whether
// groups have offsets (the types with mins: Q4_1, Q5_1, Q2_K, Q4_K, Q5_K).
int64_t ggml_group_size(GgmlType type);
bool ggml_type_has_offsets(GgmlType type);

// K-quants' (and IQ4_XS's) groups per super-block of 256 values (0 for
// other types): the
// scales (and offsets) of its groups are its d (and -dmin) times small
// integers, exactly, which group_quantized.h's two levels keep.
int64_t ggml_super_groups(GgmlType type);

// Where decode_ggml_row puts a K-quant row's two levels (all null: nowhere).
struct GgmlSteps {
  float* scale_bases = nullptr;   // per super-block
  float* offset_bases = nullptr;  // per super-block, for a type with offsets
  int8_t* scale_steps = nullptr;  // per group
  int8_t* offset_steps = nullptr;
};

// A row of a quantized type (elements a multiple of its block size) in the
// group form: codes[elements], and per group scales[] and (for a type with
// offsets) offsets[], and for a K-quant its two levels into `steps`.
// Dequantizing that form gives ggml's bits.
void decode_ggml_row(GgmlType type, const void* row, int64_t elements, int8_t* codes, float* scales, float* offsets,
                     GgmlSteps steps = {});

// out[0, elements) = the row at `row` (elements a multiple of the type's
// block size), as ggml's dequantization computes it.
void dequantize_ggml_row(GgmlType type, const void* row, float* out, int64_t elements);

}  // namespace vllm::kernels
