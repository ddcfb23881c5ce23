# A 3x3 convolution layer, int8, on an 8x8 array (tiny-8x8):
#   x: 6x6 image, 8 channels (HWC)   w: 3x3 taps of 8x8 (Cin x Cout)   b: 8 int32 biases
#   y = relu(requantize(conv3x3(x, w) + b)): 4x4 image, 8 channels, int8 (HWC)
#
# Each unified-buffer row holds one pixel's 8 channels, so the 4 output pixels of an
# output row y read input pixels (y+dy, dx..dx+3) for tap (dy, dx): 4 consecutive rows.
# The loop order is tap-major: a tap's weight tile is loaded once and used for all four
# output rows, accumulating into accumulator rows 4y..4y+3. The next tap's tile streams
# into the weight FIFO and shifts into the shadow weights while the array works.
.config tiny-8x8
.tensor x role=input dtype=int8 shape=[6, 6, 8] addr=0x0000
.tensor w role=input dtype=int8 shape=[3, 3, 8, 8] addr=0x1000
.const b dtype=int32 shape=[8] addr=0x2000 values=[100, -50, 0, 25, -100, 75, 10, -10]
.tensor y role=output dtype=int8 shape=[4, 4, 8] addr=0x3000

.desc image bytes=288                    # the whole 6x6x8 image, pixel rows of 8 bytes
.desc tap bytes=8 dim=[8, 8, 8]          # one 8x8 tap tile (rows = input channels)
.desc bias bytes=32
.desc result bytes=128                   # 16 output pixels x 8 int8 channels
.vparam requant mult=[1073741824] shift=[38] out_zp=0 min=0 max=127   # x 2^-8, then ReLU

.tag load
  li r1, 0x1000 || li r2, 0x2000          # first tap; bias
  li r3, 512    || li r4, 1024            # UB: bias row; int32 staging
  li r5, 0x3000 || li r6, 2048            # output in HBM; UB: int8 result
  dma.load desc=image src=r0 dst=r0 flag=f1
  dma.load desc=bias src=r2 dst=r3 flag=f1
  dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  mxu.wload mxu=0 || wait f1, 2

.tag conv
  mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=int8 swap=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+48 dst=r0+4 rows=4 dtype=int8 || dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  mxu.matmul mxu=0 src=r0+96 dst=r0+8 rows=4 dtype=int8
  mxu.matmul mxu=0 src=r0+144 dst=r0+12 rows=4 dtype=int8
  mxu.matmul mxu=0 src=r0+8 dst=r0+0 rows=4 dtype=int8 swap=1 acc=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+56 dst=r0+4 rows=4 dtype=int8 acc=1 || dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  mxu.matmul mxu=0 src=r0+104 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+152 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+16 dst=r0+0 rows=4 dtype=int8 swap=1 acc=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+64 dst=r0+4 rows=4 dtype=int8 acc=1 || dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  mxu.matmul mxu=0 src=r0+112 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+160 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+48 dst=r0+0 rows=4 dtype=int8 swap=1 acc=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+96 dst=r0+4 rows=4 dtype=int8 acc=1 || dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  mxu.matmul mxu=0 src=r0+144 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+192 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+56 dst=r0+0 rows=4 dtype=int8 swap=1 acc=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+104 dst=r0+4 rows=4 dtype=int8 acc=1 || dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  mxu.matmul mxu=0 src=r0+152 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+200 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+64 dst=r0+0 rows=4 dtype=int8 swap=1 acc=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+112 dst=r0+4 rows=4 dtype=int8 acc=1 || dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  mxu.matmul mxu=0 src=r0+160 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+208 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+96 dst=r0+0 rows=4 dtype=int8 swap=1 acc=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+144 dst=r0+4 rows=4 dtype=int8 acc=1 || dma.wfifo desc=tap src=r1 mxu=0 || addi r1, r1, 64
  mxu.matmul mxu=0 src=r0+192 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+240 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+104 dst=r0+0 rows=4 dtype=int8 swap=1 acc=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+152 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+200 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+248 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+112 dst=r0+0 rows=4 dtype=int8 swap=1 acc=1
  mxu.matmul mxu=0 src=r0+160 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+208 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+256 dst=r0+12 rows=4 dtype=int8 acc=1 flag=f2

.tag requant
  wait f2
  vec.add dst=acc[r0+0] a=acc[r0+0] b=ub[r3+0] rows=16 dt=int32 bcast=1 flag=f3
  wait f3
  vec.rescale dst=ub[r6+0] a=acc[r0+0] rows=16 param=requant flag=f4
  wait f4
  dma.store desc=result src=r6 dst=r5 flag=f5
  wait f5
  halt
