#pragma once
// Internal to compiler/reference: what the interpreter's files share. Each tpu op's semantics
// is one eval() overload, in the file of its operator family, written from the op's definition
// (compiler/dialect/TpuOps.td) in plain loops, accumulating in double; `y` arrives shaped as the
// op's result and zero-filled.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "dialect/tpu_dialect.h"
#include "reference/reference.h"
#include "vtpu/compiler/compiler.h"
#include "vtpu/support/clones.h"
#include "vtpu/support/parallel.h"

namespace vtpu::compiler::reference {

// The values computed so far, by Value::getAsOpaquePointer.
struct Env {
  std::map<const void*, RefTensor> values;
  const RefTensor& get(mlir::Value v) const { return values.at(v.getAsOpaquePointer()); }
};

// The float data of a tosa.const operand (weights, biases, tables, masks).
std::vector<float> consts(mlir::Value v);
// The same in place where it can be (a model's weights are not copied; tpu::float_data).
tpu::FloatData const_view(mlir::Value v);

// Rows of a convolution or matmul split over threads (VTPU_THREADS): vtpu::parallel_for.
using vtpu::parallel_for;
// x clamped to [lo, hi], as float (inline: the elementwise loops call it once per value).
inline float clampf(double x, double lo, double hi) { return float(std::min(std::max(x, lo), hi)); }

// The interpreter's MAC loops (convolution, matmul), in two builds (vtpu/support/clones.h).
// Their results are the same: each product of two floats is exact in double, so a fused
// multiply-add rounds where the separate add did, and the sums keep their order.
#define VTPU_REFERENCE_KERNEL VTPU_CLONES

// matmul.cpp
void eval(tpu::MatmulOp op, const Env& env, RefTensor& y);
void eval(tpu::BatchMatmulOp op, const Env& env, RefTensor& y);
void eval(tpu::EmbeddingOp op, const Env& env, RefTensor& y);
// conv.cpp
void eval(tpu::Conv2DOp op, const Env& env, RefTensor& y);
// A convolution's output pixels of one image row computed together, each weight row read once
// for all of them.
constexpr int64_t kConvPixels = 4;
// conv_avx512.cpp: the same loop with its sums in registers, on processors with AVX-512 (the
// same values: the tests compare the two). avx512_kernels(): the processor has them and they
// are allowed (allow_avx512_kernels(false) makes a test run the portable loop).
bool avx512_kernels();
void allow_avx512_kernels(bool allowed);
// y's output rows [row0, row1) (row nn * OH + oy) of a one-group convolution, as conv.cpp's loop.
void conv_rows_avx512(const RefTensor& x, const float* w, const std::vector<float>& b, int64_t KH, int64_t KW,
                      llvm::ArrayRef<int64_t> st, llvm::ArrayRef<int64_t> pad, llvm::ArrayRef<int64_t> dil, double lo,
                      double hi, int64_t row0, int64_t row1, RefTensor& y);
void eval(tpu::ZeroInsertOp op, const Env& env, RefTensor& y);
// pool.cpp
void eval(tpu::PoolOp op, const Env& env, RefTensor& y);
void eval(tpu::PoolArgmaxOp op, const Env& env, RefTensor& y);
// elementwise.cpp
void eval(tpu::AddOp op, const Env& env, RefTensor& y);
void eval(tpu::BinaryOp op, const Env& env, RefTensor& y);
void eval(tpu::ClampOp op, const Env& env, RefTensor& y);
void eval(tpu::UnaryOp op, const Env& env, RefTensor& y);
void eval(tpu::AffineOp op, const Env& env, RefTensor& y);
void eval(tpu::CastOp op, const Env& env, RefTensor& y);
void eval(tpu::FakeQuantOp op, const Env& env, RefTensor& y);
void eval(tpu::ConstantOp op, const Env& env, RefTensor& y);
// shape.cpp
void eval(tpu::SliceOp op, const Env& env, RefTensor& y);
void eval(tpu::ConcatOp op, const Env& env, RefTensor& y);
void eval(tpu::TransposeOp op, const Env& env, RefTensor& y);
void eval(tpu::BroadcastOp op, const Env& env, RefTensor& y);
void eval(tpu::ReshapeOp op, const Env& env, RefTensor& y);
void eval(tpu::ResizeNearestOp op, const Env& env, RefTensor& y);
// normalization.cpp
void eval(tpu::LayerNormOp op, const Env& env, RefTensor& y);
void eval(tpu::SoftmaxOp op, const Env& env, RefTensor& y);
// reduce.cpp
void eval(tpu::ArgMaxOp op, const Env& env, RefTensor& y);

}  // namespace vtpu::compiler::reference
