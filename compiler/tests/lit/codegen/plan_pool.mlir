// RUN: vtpu-opt --tpu-plan-codegen='config=tiny-8x8 dtype=int8' %s | FileCheck %s
// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 --dtype=int8 --int8-scale=0.0625 %s | FileCheck %s --check-prefix=ASM

// Pools beside independent convolutions (compiler/codegen/plan.cpp, pool_background): an
// Inception module's pooling branch reads the module's input, which the other branches'
// convolutions read too; the pool runs on the vector unit beside their matmuls.

// Two 3x3 convolutions of x before a 3x3 pool of x: on an 8x8 array each leaves
// 36 x 9 - 36 = 288 vector cycles free, the pool needs 36 x 9 = 324: both host it, the
// earlier the first half of its instructions (by estimated cycles), the later the rest.
// CHECK-LABEL: func.func @main
// CHECK: tpu.conv2d {{.*}}layer = "a"{{.*}}tpu.background = array<i64: [[ID:[0-9]+]], 0, 500>
// CHECK: tpu.conv2d {{.*}}layer = "b"{{.*}}tpu.background = array<i64: [[ID]], 500, 1000>
// CHECK: tpu.pool {{.*}}tpu.id = [[ID]] : i64, tpu.role = "background"
// The instructions: the pool's (with the tag of the convolution beside which they run)
// among the convolutions' matmuls, none at the pool's own tag.
// ASM-LABEL: .tag "a"
// ASM: mxu.matmul
// ASM: vec.avgpool
// ASM: .tag "b"
// ASM: vec.avgpool
// ASM: .tag "p"
// ASM-NOT: vec.avgpool
// ASM: .tag "q"
func.func @main(%x: tensor<1x6x6x8xf32> {vtpu.name = "x"}) -> (tensor<1x6x6x8xf32> {vtpu.name = "a"}, tensor<1x6x6x8xf32> {vtpu.name = "b"}, tensor<1x6x6x8xf32> {vtpu.name = "q"}) {
  %w = "tosa.const"() {value = dense<0.25> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %b = "tosa.const"() {value = dense<0.5> : tensor<8xf32>} : () -> tensor<8xf32>
  %a = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "a", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x6x6x8xf32>
  %c = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "b", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x6x6x8xf32>
  %p = tpu.pool %x {kernel = array<i64: 3, 3>, kind = "avg", layer = "p", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %q = tpu.unary %p {fn = "tanh", layer = "q"} : (tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %a, %c, %q : tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>
}

// A pool that is a convolution's only use runs beside that convolution's matmuls instead
// (pool_after; the instructions: pool_after.mlir).
// CHECK-LABEL: func.func @after
// CHECK-NOT: tpu.background
// CHECK: tpu.conv2d {{.*}}tpu.epilogue = "pool", tpu.id = [[C:[0-9]+]]
// CHECK: tpu.pool {{.*}}tpu.fused_into = [[C]] : i64, tpu.role = "pool"
// CHECK: return
func.func @after(%x: tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32> {
  %w = "tosa.const"() {value = dense<0.25> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %b = "tosa.const"() {value = dense<0.5> : tensor<8xf32>} : () -> tensor<8xf32>
  %a = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "a", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x6x6x8xf32>
  %p = tpu.pool %a {kernel = array<i64: 3, 3>, kind = "max", layer = "p", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %p : tensor<1x6x6x8xf32>
}

// A convolution that leaves the vector unit no time (a 1x1 convolution on one lane block:
// a matmul row per output row, an epilogue row per output row) hosts nothing.
// CHECK-LABEL: func.func @no_room
// CHECK-NOT: tpu.background
// CHECK: return
func.func @no_room(%x: tensor<1x6x6x8xf32>) -> (tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>) {
  %w = "tosa.const"() {value = dense<0.25> : tensor<1x1x8x8xf32>} : () -> tensor<1x1x8x8xf32>
  %b = "tosa.const"() {value = dense<0.5> : tensor<8xf32>} : () -> tensor<8xf32>
  %a = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "a", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>, tensor<1x1x8x8xf32>, tensor<8xf32>) -> tensor<1x6x6x8xf32>
  %p = tpu.pool %x {kernel = array<i64: 3, 3>, kind = "max", layer = "p", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %a, %p : tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>
}
