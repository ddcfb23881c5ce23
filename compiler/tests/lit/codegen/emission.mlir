// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// A lone `li` joins the bundle before it when that bundle has a scalar slot free, does not
// write the li's register and does not branch (compiler/codegen/emission.cpp): registers are
// read before they are written within a bundle (docs/isa.md), so the bundle's dma.wfifo
// still reads tile 2's address from r16 while the li puts tile 3's there for the next
// bundle. A 32 x 8 matmul on the 8 x 8 array streams four weight tiles: one bundle each.
// CHECK: .tag "fc"
// CHECK-NEXT: dma.load desc={{d[0-9]+}} src=r0 dst=r0 flag=f1
// CHECK-NEXT: wait f1 || li r16, [[T2:[0-9]+]]
// CHECK-NEXT: mxu.matmul mxu=0 src=r0+0 {{.*}} || mxu.wload mxu=0 || dma.wfifo desc=[[D:d[0-9]+]] src=r16 mxu=0 || li r16, [[T3:[0-9]+]]
// CHECK-NEXT: mxu.matmul mxu=0 src=r0+64 {{.*}} || mxu.wload mxu=0 || dma.wfifo desc=[[D]] src=r16 mxu=0{{$}}
// CHECK-NEXT: mxu.matmul mxu=0 src=r0+128 {{.*}} || mxu.wload mxu=0{{$}}
// CHECK-NEXT: mxu.matmul mxu=0 src=r0+192 {{.*}} flag=f2
// CHECK-NOT: {{^ *}}li r16
// CHECK: .tag "output y"
func.func @main(%x: tensor<4x32xf32> {vtpu.name = "x"}) -> (tensor<4x8xf32> {vtpu.name = "y"}) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<32x8xf32>} : () -> tensor<32x8xf32>
  %b = "tosa.const"() {value = dense<0.25> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "fc"} : (tensor<4x32xf32>, tensor<32x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
