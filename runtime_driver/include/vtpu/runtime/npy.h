#pragma once
// NumPy .npy files (format versions 1.0-3.0, C order), the format vtpu reads inputs from and
// writes outputs to. bf16 has no NumPy type: bf16 tensors are read from and written as
// float32 files (exactly on writing; reading rounds to nearest even).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "vtpu/isa/isa.h"
#include "vtpu/support/error.h"

namespace vtpu::runtime {

struct NpyArray {
  std::string descr;           // e.g. "<i1", "<f4"
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;   // little-endian, C order
};

NpyArray read_npy(const std::filesystem::path& path);
void write_npy(const std::filesystem::path& path, const NpyArray& a);

// The elements of an array of a numeric NumPy type (b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4,
// f8) as doubles (64-bit integers past 2^53 rounded); nothing for another type.
std::optional<std::vector<double>> npy_values(const NpyArray& a);
// An array of NumPy type `descr` (one of those) and `shape` holding `values`, converted as C++
// converts (integers truncate toward zero; f2 rounds to nearest even).
NpyArray npy_of(const std::string& descr, const std::vector<int64_t>& shape, const std::vector<double>& values);

// Throws UserError naming the file and the input unless `a` has exactly `shape` (a
// transposed array with the right element count is an error too).
void check_npy_shape(const NpyArray& a, const std::vector<int64_t>& shape, const std::string& tensor,
                     const std::string& file);

// The bytes of a tensor of `dtype` and `shape` from an array, converting float32 to bf16
// when the tensor is bf16. Errors name the file, the tensor and what differs.
std::vector<uint8_t> tensor_bytes_from_npy(const NpyArray& a, isa::Dtype dtype,
                                           const std::vector<int64_t>& shape,
                                           const std::string& tensor, const std::string& file);
// An array holding a tensor's bytes (bf16 widened to float32).
NpyArray npy_from_tensor_bytes(const std::vector<uint8_t>& bytes, isa::Dtype dtype,
                               const std::vector<int64_t>& shape);

}  // namespace vtpu::runtime
