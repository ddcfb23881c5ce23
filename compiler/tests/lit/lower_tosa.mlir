// RUN: vtpu-opt --pass-pipeline='builtin.module(func.func(tpu-lower-tosa))' %s | FileCheck %s

// fully_connected + clamp(0, max) becomes one tpu.matmul with a ReLU clamp; the weight is
// transposed to [K, N].
// CHECK-LABEL: func.func @fc_relu
// CHECK: %[[W:.*]] = "tosa.const"() <{value = dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}>
// CHECK: tpu.matmul %arg0, %[[W]], %{{.*}} {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0.000000e+00 : f64, layer = "fc"}
// CHECK-NOT: tosa.clamp
// CHECK-NOT: tosa.fully_connected
func.func @fc_relu(%arg0: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = "tosa.const"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32> loc("fc")
  %b = "tosa.const"() {value = dense<0.5> : tensor<2xf32>} : () -> tensor<2xf32> loc("fc")
  %0 = tosa.fully_connected %arg0, %w, %b : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("fc")
  %1 = tosa.clamp %0 {max_fp = 3.40282347E+38 : f32, max_int = 1000000000 : i64, min_fp = 0.0 : f32, min_int = 0 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32> loc("relu")
  return %1 : tensor<3x2xf32>
}

// conv2d with a bias add and a clamp becomes tpu.conv2d; weights go to [KH, KW, CI, CO].
// CHECK-LABEL: func.func @conv
// CHECK: tpu.conv2d
// CHECK-SAME: clamp_max = 6.000000e+00
// CHECK-SAME: layer = "c1"
// CHECK-SAME: (tensor<1x4x4x1xf32>, tensor<1x1x1x2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
func.func @conv(%arg0: tensor<1x4x4x1xf32>) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() {value = dense<1.0> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = tosa.conv2d %arg0, %w, %b {dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32> loc("c1")
  %1 = tosa.clamp %0 {max_fp = 6.0 : f32, max_int = 6 : i64, min_fp = 0.0 : f32, min_int = 0 : i64} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  return %1 : tensor<1x4x4x2xf32>
}

// depthwise_conv2d becomes tpu.conv2d with one group per input channel; [KH, KW, C, M]
// is already [KH, KW, CI / groups, CO] (here C = 2, M = 2: CO = 4).
// CHECK-LABEL: func.func @depthwise
// CHECK: tpu.conv2d
// CHECK-SAME: groups = 2 : i64
// CHECK-SAME: layer = "dw"
// CHECK-SAME: (tensor<1x4x4x2xf32>, tensor<3x3x1x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
func.func @depthwise(%arg0: tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32> {
  %w = "tosa.const"() {value = dense<1.0> : tensor<3x3x2x2xf32>} : () -> tensor<3x3x2x2xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tosa.depthwise_conv2d %arg0, %w, %b {dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32> loc("dw")
  return %0 : tensor<1x4x4x4xf32>
}

// GELU's erf form as exported (x / sqrt 2 folded into a multiply) becomes one vec.gelu.
// CHECK-LABEL: func.func @gelu
// CHECK: tpu.unary %arg0 {fn = "gelu", layer = "g"}
// CHECK-NOT: tosa.erf
func.func @gelu(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %r = "tosa.const"() {value = dense<0.707106769> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %one = "tosa.const"() {value = dense<1.0> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %half = "tosa.const"() {value = dense<0.5> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %0 = tosa.mul %arg0, %r {shift = 0 : i8} : (tensor<2x5xf32>, tensor<1x1xf32>) -> tensor<2x5xf32> loc("g.div")
  %1 = tosa.erf %0 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("g")
  %2 = tosa.add %1, %one : (tensor<2x5xf32>, tensor<1x1xf32>) -> tensor<2x5xf32>
  %3 = tosa.mul %arg0, %2 {shift = 0 : i8} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %4 = tosa.mul %3, %half {shift = 0 : i8} : (tensor<2x5xf32>, tensor<1x1xf32>) -> tensor<2x5xf32>
  return %4 : tensor<2x5xf32>
}

// Layer normalization's TOSA form (as the importer writes it) becomes one tpu.layernorm.
// CHECK-LABEL: func.func @layernorm
// CHECK: tpu.layernorm %arg0 {epsilon = 9.9999997473787516E-6 : f64, layer = "ln"}
// CHECK-NOT: tosa.reduce_sum
// CHECK-NOT: tosa.rsqrt
func.func @layernorm(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %inv = "tosa.const"() {value = dense<0.25> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %eps = "tosa.const"() {value = dense<1.0e-5> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
  %0 = tosa.reduce_sum %arg0 {axis = 1 : i32} : (tensor<2x4xf32>) -> tensor<2x1xf32> loc("ln")
  %1 = tosa.mul %0, %inv {shift = 0 : i8} : (tensor<2x1xf32>, tensor<1x1xf32>) -> tensor<2x1xf32>
  %2 = tosa.sub %arg0, %1 : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %3 = tosa.mul %2, %2 {shift = 0 : i8} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = tosa.reduce_sum %3 {axis = 1 : i32} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %5 = tosa.mul %4, %inv {shift = 0 : i8} : (tensor<2x1xf32>, tensor<1x1xf32>) -> tensor<2x1xf32>
  %6 = tosa.add %5, %eps : (tensor<2x1xf32>, tensor<1x1xf32>) -> tensor<2x1xf32>
  %7 = tosa.rsqrt %6 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %8 = tosa.mul %2, %7 {shift = 0 : i8} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %8 : tensor<2x4xf32>
}

// The TOSA decomposition of softmax is matched back into one tpu.softmax.
// CHECK-LABEL: func.func @softmax
// CHECK: tpu.softmax %arg0 {layer = "sm"}
// CHECK-NOT: tosa.exp
func.func @softmax(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tosa.reduce_max %arg0 {axis = 1 : i32} : (tensor<2x5xf32>) -> tensor<2x1xf32> loc("sm")
  %1 = tosa.sub %arg0, %0 : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  %2 = tosa.exp %1 : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %3 = tosa.reduce_sum %2 {axis = 1 : i32} : (tensor<2x5xf32>) -> tensor<2x1xf32>
  %4 = tosa.reciprocal %3 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %5 = tosa.mul %2, %4 {shift = 0 : i8} : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  return %5 : tensor<2x5xf32>
}

// So is the log-softmax's, (x - max) - log(sum(exp(x - max))), into tpu.softmax {log}.
// CHECK-LABEL: func.func @log_softmax
// CHECK: tpu.softmax %arg0 {layer = "lsm", log}
// CHECK-NOT: tosa.log
func.func @log_softmax(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tosa.reduce_max %arg0 {axis = 1 : i32} : (tensor<2x5xf32>) -> tensor<2x1xf32> loc("lsm")
  %1 = tosa.sub %arg0, %0 : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  %2 = tosa.exp %1 : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %3 = tosa.reduce_sum %2 {axis = 1 : i32} : (tensor<2x5xf32>) -> tensor<2x1xf32>
  %4 = tosa.log %3 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %5 = tosa.sub %1, %4 : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  return %5 : tensor<2x5xf32>
}

// An unsupported op is an error naming its node.
// RUN: not vtpu-opt --pass-pipeline='builtin.module(func.func(tpu-lower-tosa))' %S/Inputs/unsupported.mlir 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: node 'my_floor': tosa.floor cannot be lowered to the tpu dialect

// Table functions become tpu.unary.
// CHECK-LABEL: func.func @tables
// CHECK: tpu.unary %arg0 {fn = "sigmoid", layer = "s"}
// CHECK: tpu.unary %{{.*}} {fn = "tanh", layer = "t"}
// CHECK: tpu.unary %{{.*}} {fn = "exp", layer = "e"}
// CHECK: tpu.unary %{{.*}} {fn = "rsqrt", layer = "q"}
// CHECK: tpu.unary %{{.*}} {fn = "log", layer = "l"}
// CHECK: tpu.unary %{{.*}} {fn = "recip", layer = "r"}
func.func @tables(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tosa.sigmoid %arg0 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("s")
  %1 = tosa.tanh %0 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("t")
  %2 = tosa.exp %1 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("e")
  %3 = tosa.rsqrt %2 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("q")
  %4 = tosa.log %3 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("l")
  %5 = tosa.reciprocal %4 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("r")
  return %5 : tensor<2x5xf32>
}

// The importer's sqrt, reciprocal(rsqrt(x)), becomes one tpu.unary "sqrt" (two table steps
// on the same rows; INT8 does not round the 1/sqrt between them).
// CHECK-LABEL: func.func @sqrt
// CHECK: tpu.unary %arg0 {fn = "sqrt", layer = "root"}
// CHECK-NOT: fn = "rsqrt"
func.func @sqrt(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tosa.rsqrt %arg0 : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %1 = tosa.reciprocal %0 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("root")
  return %1 : tensor<2x5xf32>
}

// Sub and Mul of two activations become tpu.binary; a Mul by a constant stays an affine.
// CHECK-LABEL: func.func @binary
// CHECK: tpu.binary %arg0, %arg1 {kind = "sub", layer = "d"}
// CHECK: tpu.binary %{{.*}}, %arg0 {kind = "mul", layer = "m"}
// CHECK: tpu.affine
// CHECK: tpu.binary %{{.*}}, %arg1 {kind = "max", layer = "hi"}
// CHECK: tpu.binary %{{.*}}, %arg0 {kind = "min", layer = "lo"}
func.func @binary(%arg0: tensor<2x5xf32>, %arg1: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tosa.sub %arg0, %arg1 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32> loc("d")
  %1 = tosa.mul %0, %arg0 {shift = 0 : i8} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32> loc("m")
  %k = "tosa.const"() {value = dense<2.0> : tensor<1x1xf32>} : () -> tensor<1x1xf32> loc("s")
  %2 = tosa.mul %1, %k {shift = 0 : i8} : (tensor<2x5xf32>, tensor<1x1xf32>) -> tensor<2x5xf32> loc("s")
  %3 = tosa.maximum %2, %arg1 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32> loc("hi")
  %4 = tosa.minimum %3, %arg0 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32> loc("lo")
  return %4 : tensor<2x5xf32>
}

// An avg_pool2d leaves its own padding out of the divisor (TOSA); a zero tosa.pad in front is
// ONNX's count_include_pad and folds into the pool as that flag.
// CHECK-LABEL: func.func @avg_pools
// CHECK: tpu.pool %arg0 {kernel = array<i64: 3, 3>, kind = "avg", layer = "excl", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>}
// CHECK: tpu.pool %arg0 {count_include_pad, kernel = array<i64: 3, 3>, kind = "avg", layer = "incl", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>}
// CHECK-NOT: tosa.pad
func.func @avg_pools(%arg0: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) {
  %0 = tosa.avg_pool2d %arg0 {acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> loc("excl")
  %p = "tosa.const"() {value = dense<[[0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>} : () -> tensor<4x2xi64> loc("incl")
  %1 = tosa.pad %arg0, %p : (tensor<1x4x4x8xf32>, tensor<4x2xi64>) -> tensor<1x6x6x8xf32> loc("incl")
  %2 = tosa.avg_pool2d %1 {acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>) -> tensor<1x4x4x8xf32> loc("incl")
  return %0, %2 : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>
}

// Activations of different shapes meet through tpu.broadcast along their size-1 dimensions.
// CHECK-LABEL: func.func @bcast
// CHECK: %[[B:.*]] = tpu.broadcast %arg1 {layer = "m.broadcast"} : (tensor<1x1x1x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK: tpu.binary %arg0, %[[B]] {kind = "mul", layer = "m"}
func.func @bcast(%arg0: tensor<1x4x4x8xf32>, %arg1: tensor<1x1x1x8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = tosa.mul %arg0, %arg1 {shift = 0 : i8} : (tensor<1x4x4x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x4x4x8xf32> loc("m")
  return %0 : tensor<1x4x4x8xf32>
}

// A transpose of an activation that no matmul absorbs moves data: tpu.transpose.
// CHECK-LABEL: func.func @transpose_act
// CHECK: tpu.transpose %arg0 {layer = "t", perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x4x2x3xf32>
func.func @transpose_act(%arg0: tensor<1x2x3x4xf32>) -> tensor<1x4x2x3xf32> {
  %p = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32> loc("t")
  %0 = tosa.transpose %arg0, %p : (tensor<1x2x3x4xf32>, tensor<4xi32>) -> tensor<1x4x2x3xf32> loc("t")
  return %0 : tensor<1x4x2x3xf32>
}

// Concat of activations becomes tpu.concat on the same axis.
// CHECK-LABEL: func.func @concat
// CHECK: tpu.concat %arg0, %arg1 {axis = 3 : i64, layer = "c"} : (tensor<1x2x2x3xf32>, tensor<1x2x2x5xf32>) -> tensor<1x2x2x8xf32>
func.func @concat(%arg0: tensor<1x2x2x3xf32>, %arg1: tensor<1x2x2x5xf32>) -> tensor<1x2x2x8xf32> {
  %0 = tosa.concat %arg0, %arg1 {axis = 3 : i32} : (tensor<1x2x2x3xf32>, tensor<1x2x2x5xf32>) -> tensor<1x2x2x8xf32> loc("c")
  return %0 : tensor<1x2x2x8xf32>
}

// A slice of an activation becomes tpu.slice with the same start.
// CHECK-LABEL: func.func @slice
// CHECK: tpu.slice %arg0 {layer = "s", start = array<i64: 0, 1, 0, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x2x4x3xf32>
func.func @slice(%arg0: tensor<1x4x4x8xf32>) -> tensor<1x2x4x3xf32> {
  %0 = tosa.slice %arg0 {start = array<i64: 0, 1, 0, 2>, size = array<i64: 1, 2, 4, 3>} : (tensor<1x4x4x8xf32>) -> tensor<1x2x4x3xf32> loc("s")
  return %0 : tensor<1x2x4x3xf32>
}

// A row sum outside a softmax or layer norm is a matmul with a column of ones.
// CHECK-LABEL: func.func @row_sum
// CHECK: %[[ONES:.*]] = "tosa.const"() <{value = dense<1.000000e+00> : tensor<5x1xf32>}>
// CHECK: tpu.matmul %arg0, %[[ONES]], %{{.*}} {{.*}}layer = "sum"{{.*}} -> tensor<2x1xf32>
// CHECK-NOT: tosa.reduce_sum
func.func @row_sum(%arg0: tensor<2x5xf32>) -> tensor<2x1xf32> {
  %0 = tosa.reduce_sum %arg0 {axis = 1 : i32} : (tensor<2x5xf32>) -> tensor<2x1xf32> loc("sum")
  return %0 : tensor<2x1xf32>
}

// An activation broadcast along the lanes (a [.., 1] column against [.., N]) is repeated
// by a matmul with a row of ones, then the op runs on equal shapes.
// CHECK-LABEL: func.func @lane_broadcast
// CHECK: %[[ONES:.*]] = "tosa.const"() <{value = dense<1.000000e+00> : tensor<1x5xf32>}>
// CHECK: %[[WIDE:.*]] = tpu.matmul %arg1, %[[ONES]], %{{.*}} -> tensor<2x5xf32>
// CHECK: tpu.binary %arg0, %[[WIDE]] {kind = "sub"
func.func @lane_broadcast(%arg0: tensor<2x5xf32>, %arg1: tensor<2x1xf32>) -> tensor<2x5xf32> {
  %0 = tosa.sub %arg0, %arg1 : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32> loc("centre")
  return %0 : tensor<2x5xf32>
}
