// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// ArgMax of each row in fp32 rows (docs/compiler.md): the row maximum M, then every lane
// offers min((M - v) * 2^200, 1) * 2^30 + its index (2^100 applied twice), so only lanes
// equal to the maximum offer their index, and the row minimum of the offers, as -rmax of
// their negation, is the answer; each row's index becomes element r of the int32 output.
// CHECK: .vparam [[NEG:p[0-9]+]] scale=[-1]
// CHECK: .vparam [[HUGE:p[0-9]+]] scale=[1.2676506002282294e+30]
// CHECK: .vparam [[BIT:p[0-9]+]] min=0 max=1
// CHECK: .vparam [[OFFER:p[0-9]+]] scale=[1073741824] bias=[0, 1, 2, 3, 4, 5, 6, 7]
// CHECK: .tag "am"
// CHECK: vec.rmax
// CHECK: vec.sub
// CHECK-COUNT-2: vec.affine {{.*}} param=[[HUGE]]
// CHECK: vec.clamp {{.*}} param=[[BIT]]
// CHECK: vec.affine {{.*}} param=[[OFFER]]
// CHECK: vec.affine {{.*}} param=[[NEG]]
// CHECK: vec.rmax
// CHECK: vec.cvt {{.*}} dt=fp32 odt=int32
// CHECK: dma.store
func.func @main(%x: tensor<2x8xf32> {vtpu.name = "x"}) -> (tensor<2xi32> {vtpu.name = "am"}) {
  %am = tpu.argmax %x {layer = "am"} : (tensor<2x8xf32>) -> tensor<2xi32>
  return %am : tensor<2xi32>
}
