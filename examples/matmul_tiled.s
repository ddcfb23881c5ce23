# C[16x16] (int32) = A[16x16] (int8) x W[16x16] (int8) on an 8x8 array (tiny-8x8).
#
# The output is two 16x8 column blocks; each takes two 8x8 weight tiles (K = 0..7, 8..15).
# Weights are double-buffered: while the array multiplies with one tile, the next tile
# shifts into the shadow registers (mxu.wload) and the one after that streams from HBM into
# the weight FIFO (dma.wfifo), so the array never waits for weights after the first tile.
.config tiny-8x8
.tensor A role=input dtype=int8 shape=[16, 16] addr=0x0000
.tensor W role=input dtype=int8 shape=[16, 16] addr=0x1000
.tensor C role=output dtype=int32 shape=[16, 16] addr=0x2000

.desc a_slice bytes=8 dim=[16, 16, 8]     # one K-slice of A: 16 rows x 8 bytes, packed in UB
.desc w_tile  bytes=8 dim=[8, 16, 8]      # one 8x8 tile of W (row stride 16 bytes in HBM)
.desc c_block bytes=32 dim=[16, 32, 64]   # 16 rows x 8 int32 from UB into C's column block

.tag load
  li r1, 0x0000 || li r3, 0x0008           # A[:, 0:8] and A[:, 8:16]
  li r4, 128    || li r5, 0x1000           # UB address of the second slice; W[0:8, 0:8]
  li r6, 0x1008 || li r7, 0x1080           # W[0:8, 8:16]; W[8:16, 0:8]
  li r8, 0x1088 || li r9, 0x2000           # W[8:16, 8:16]; C[:, 0:8]
  li r10, 0x2020 || li r11, 256            # C[:, 8:16]; UB address of the results
  li r12, 768   || dma.load desc=a_slice src=r1 dst=r0 flag=f1
  dma.load desc=a_slice src=r3 dst=r4 flag=f1
  dma.wfifo desc=w_tile src=r5 mxu=0
  dma.wfifo desc=w_tile src=r7 mxu=0

.tag matmul
  mxu.wload mxu=0 || wait f1, 2
  mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=16 dtype=int8 swap=1 || mxu.wload mxu=0 || dma.wfifo desc=w_tile src=r6 mxu=0
  mxu.matmul mxu=0 src=r0+128 dst=r0+0 rows=16 dtype=int8 acc=1 swap=1 || mxu.wload mxu=0 || dma.wfifo desc=w_tile src=r8 mxu=0
  mxu.matmul mxu=0 src=r0+0 dst=r0+16 rows=16 dtype=int8 swap=1 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=r0+128 dst=r0+16 rows=16 dtype=int8 acc=1 swap=1 flag=f2

.tag store
  wait f2
  vec.copy dst=ub[r11+0] a=acc[r0+0] rows=32 dt=int32 flag=f3
  wait f3
  dma.store desc=c_block src=r11 dst=r9 flag=f4
  dma.store desc=c_block src=r12 dst=r10 flag=f4
  wait f4, 2
  halt
