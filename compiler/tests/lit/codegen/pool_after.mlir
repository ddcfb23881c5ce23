// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 --dtype=int8 --int8-scale=0.0625 %s | FileCheck %s

// A pool that is a convolution's only use (planned: plan.cpp pool_after) runs beside the
// convolution's matmuls (pool.cpp, pool_beside): an output row of the pool goes once the
// blocks writing the rows its windows read have their epilogues done. Here a 3x3 max pool
// with stride 2 of a 3x3 convolution's 48 x 48 output on an 8x8 array (512 accumulator
// rows): blocks of 4 output rows (192 pixels). The pool's rows 0 and 1 (windows over
// rows 0-3) wait for the first block's epilogue (f4 counts epilogue operations) and issue
// among the second block's matmuls; none of the pool's instructions are left for its turn.
// CHECK: .tag "c"
// CHECK: mxu.matmul {{.*}}flag=f2
// CHECK: vec.addrescale {{.*}}rows=192
// CHECK: wait f4
// CHECK-NEXT: li
// CHECK-NEXT: vec.maxpool dst=ub[r2+0] a=ub[r1+0] rows=1
// CHECK: vec.maxpool dst=ub[r2+0] a=ub[r1+0] rows=23
// CHECK: mxu.matmul
// CHECK: mxu.matmul {{.*}}flag=f2
// CHECK: vec.addrescale {{.*}}rows=192
// CHECK: .tag "p"
// CHECK-NOT: vec.maxpool
// CHECK: .tag "output y"
func.func @main(%x: tensor<1x48x48x8xf32> {vtpu.name = "x"}) -> (tensor<1x24x24x8xf32> {vtpu.name = "y"}) {
  %w = "tosa.const"() {value = dense<0.25> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %b = "tosa.const"() {value = dense<0.5> : tensor<8xf32>} : () -> tensor<8xf32>
  %a = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x48x48x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x48x48x8xf32>
  %p = tpu.pool %a {kernel = array<i64: 3, 3>, kind = "max", layer = "p", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x48x48x8xf32>) -> tensor<1x24x24x8xf32>
  return %p : tensor<1x24x24x8xf32>
}
