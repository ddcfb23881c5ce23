// Gemm, MatMul (of a constant weight, or of two activations), MatMulInteger and ConvInteger.
#include <fmt/format.h>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

void Importer::gemm(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"alpha", "beta", "transA", "transB"});
  Tensor a = input(n, 0);
  if (a.shape.size() != 2) fail("Gemm input A must be 2-D", node_name(n));
  if (attr_i(n, "transA", 0)) {  // the activation is transposed first (a data move on the chip)
    a.value = transpose(a.value, {1, 0}, loc);
    a.shape = {a.shape[1], a.shape[0]};
  }
  const Constant& w = const_input(n, 1, "Gemm input B");
  float alpha = attr_f(n, "alpha", 1.0f), beta = attr_f(n, "beta", 1.0f);
  bool tb = attr_i(n, "transB", 0) != 0;
  int64_t K = a.shape[1], N = tb ? w.shape[0] : w.shape[1];
  if ((tb ? w.shape[1] : w.shape[0]) != K) fail("Gemm: A and B shapes do not agree", node_name(n));
  // TOSA fully_connected wants weights [N, K]: with transB they are already.
  auto scaled = [alpha](float v) { return alpha * v; };
  std::vector<float> wt = tb ? std::vector<float>(w.data.size()) : transposed(w.data, K, N, scaled);
  if (tb) std::transform(w.data.begin(), w.data.end(), wt.begin(), scaled);
  std::vector<float> bias(size_t(N), 0.0f);
  std::vector<float> matrix_bias;  // C of [M, N] or [M, 1]: added after the matmul
  int64_t M = a.shape[0];
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const Constant& c = const_input(n, 2, "Gemm input C");
    bool per_column = numel(c.shape) == N && (c.shape.size() < 2 || c.shape[0] == 1);
    if (per_column) for (int64_t j = 0; j < N; ++j) bias[size_t(j)] = beta * c.data[size_t(j)];
    else if (numel(c.shape) == 1) for (auto& x : bias) x = beta * c.data[0];
    else if (c.shape.size() == 2 && (c.shape[0] == M || c.shape[0] == 1) && (c.shape[1] == N || c.shape[1] == 1)) {
      matrix_bias.resize(size_t(M * N));
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          matrix_bias[size_t(i * N + j)] = beta * c.data[size_t((c.shape[0] == 1 ? 0 : i) * c.shape[1] + (c.shape[1] == 1 ? 0 : j))];
    } else {
      fail(fmt::format("Gemm input C of shape [{}] does not broadcast to [{}, {}]", fmt::join(c.shape, ", "), M, N), node_name(n));
    }
  }
  Value fc = b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({M, N}), a.value,
                                                     constant({N, K}, std::move(wt), loc), constant({N}, bias, loc), nullptr);
  if (!matrix_bias.empty()) fc = b_.create<mlir::tosa::AddOp>(loc, tensor_type({M, N}), fc, constant({M, N}, matrix_bias, loc));
  define(n, {fc, {M, N}, false});
}

// MatMul of two activations (attention's Q K^T and P V): [..., M, K] x [..., K, N] with the
// same batch dimensions, as a 3-D tosa.matmul.
void Importer::batch_matmul(const onnx::NodeProto& n, mlir::Location loc) {
  define(n, batch_matmul_of(n, input(n, 0), input(n, 1), loc));
}

Tensor Importer::batch_matmul_of(const onnx::NodeProto& n, Tensor a, Tensor c, mlir::Location loc) {
  if (a.nhwc) a = {to_nchw_value(a, loc), a.shape, false};
  if (c.nhwc) c = {to_nchw_value(c, loc), c.shape, false};
  if (a.shape.size() < 2 || a.shape.size() != c.shape.size())
    fail(fmt::format("MatMul of two activations needs inputs of one rank >= 2 (got [{}] and [{}])", fmt::join(a.shape, ", "),
                     fmt::join(c.shape, ", ")),
         node_name(n));
  size_t r = a.shape.size();
  int64_t M = a.shape[r - 2], K = a.shape[r - 1], N = c.shape[r - 1], B = 1;
  for (size_t i = 0; i + 2 < r; ++i) {
    if (a.shape[i] != c.shape[i])
      fail(fmt::format("MatMul batch dimension {} differs ({} and {}); broadcasting batch dimensions is not supported", i,
                       a.shape[i], c.shape[i]),
           node_name(n));
    B *= a.shape[i];
  }
  if (c.shape[r - 2] != K) fail(fmt::format("MatMul: [{}] x [{}] do not agree", fmt::join(a.shape, ", "), fmt::join(c.shape, ", ")), node_name(n));
  Value a3 = r == 3 ? a.value : reshape(a.value, {B, M, K}, loc), c3 = r == 3 ? c.value : reshape(c.value, {B, K, N}, loc);
  Value y = b_.create<mlir::tosa::MatMulOp>(loc, tensor_type({B, M, N}), a3, c3);
  std::vector<int64_t> out = a.shape;
  out.back() = N;
  return {r == 3 ? y : reshape(y, out, loc), out, false};
}

void Importer::matmul(const onnx::NodeProto& n, mlir::Location loc) {
  if (n.input_size() > 1 && !constants_.count(n.input(1))) return batch_matmul(n, loc);
  define(n, matmul_const(n, input(n, 0), const_input(n, 1, "MatMul input B"), loc));
}

Tensor Importer::matmul_const(const onnx::NodeProto& n, const Tensor& a, const Constant& w, mlir::Location loc) {
  if (a.nhwc) fail("MatMul on an image tensor is not supported", node_name(n));
  if (w.shape.size() != 2) fail("MatMul weight must be 2-D", node_name(n));
  int64_t K = w.shape[0], N = w.shape[1];
  if (a.shape.back() != K) fail("MatMul: shapes do not agree", node_name(n));
  int64_t M = numel(a.shape) / K;
  std::vector<float> wt = transposed(w.data, K, N, [](float v) { return v; });  // [N, K]
  Value x = a.shape.size() == 2 ? a.value : reshape(a.value, {M, K}, loc);
  Value fc = b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({M, N}), x, constant({N, K}, std::move(wt), loc),
                                                     constant({N}, std::vector<float>(size_t(N), 0.0f), loc), nullptr);
  std::vector<int64_t> out = a.shape;
  out.back() = N;
  return {out.size() == 2 ? fc : reshape(fc, out, loc), out, false};
}

// MatMulInteger / ConvInteger: (A - a_zero_point) x (B - b_zero_point) as a float matmul
// or convolution. With bf16 activations this is exact: |a - zp| <= 255 has 8 significant
// bits and the MXU's fp32 sums of such products are exact below 2^24; an int32 model
// output then leaves the accumulators as int32 (docs/compiler.md).
void Importer::integer_op(const onnx::NodeProto& n, mlir::Location loc) {
  bool conv = n.op_type() == "ConvInteger";
  if (conv) only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  else only_attrs(n, {});
  Tensor a = input(n, 0);
  auto zero = [&](int i, const char* what) -> std::vector<float> {
    if (n.input_size() <= i || n.input(i).empty()) return {0.0f};
    return const_input(n, i, what).data;
  };
  std::vector<float> a_zp = zero(2, conv ? "ConvInteger x_zero_point" : "MatMulInteger a_zero_point");
  std::vector<float> b_zp = zero(3, conv ? "ConvInteger w_zero_point" : "MatMulInteger b_zero_point");
  Constant w = const_input(n, 1, conv ? "ConvInteger weight w" : "MatMulInteger input B");
  // The weights minus their zero point: per tensor, or per output channel (ConvInteger:
  // the first axis of w; MatMulInteger: B's columns).
  int64_t channels = conv ? w.shape[0] : w.shape.back();
  if (b_zp.size() != 1 && int64_t(b_zp.size()) != channels)
    fail(fmt::format("{} weight zero point has {} values; it must be a scalar or one per output channel ({})", n.op_type(),
                     b_zp.size(), channels),
         node_name(n));
  int64_t per = numel(w.shape) / channels;
  for (size_t i = 0; i < w.data.size(); ++i) {
    size_t ch = b_zp.size() == 1 ? 0 : conv ? i / size_t(per) : i % size_t(channels);
    w.data[i] -= b_zp[ch];
  }
  // The activation minus its zero point: per tensor, or (MatMulInteger) per row of A.
  std::vector<int64_t> zs(a.shape.size(), 1);
  if (a_zp.size() != 1) {
    if (conv || a.shape.size() < 2 || int64_t(a_zp.size()) != a.shape[a.shape.size() - 2])
      fail(fmt::format("{} activation zero point has {} values; it must be a scalar{}", n.op_type(), a_zp.size(),
                       conv ? "" : " or one per row of A"),
           node_name(n));
    zs[zs.size() - 2] = int64_t(a_zp.size());
  }
  if (std::any_of(a_zp.begin(), a_zp.end(), [](float z) { return z != 0.0f; })) {
    auto t = a.value.getType();
    a.value = b_.create<mlir::tosa::SubOp>(loc, t, a.value, constant(zs, a_zp, loc));
  }
  Tensor y = conv ? conv_of(n, a, w, {}, loc) : (w.shape.size() == 2 ? matmul_const(n, a, w, loc) : Tensor{});
  if (!y.value) fail("MatMulInteger needs a 2-D constant B", node_name(n));
  integer_valued_.insert(n.output(0));
  define(n, y);
}

}  // namespace vtpu::compiler::onnx_import
