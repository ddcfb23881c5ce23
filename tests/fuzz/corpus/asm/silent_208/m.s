# vtpu program: 52 bundles, container format 2
.config "tiny-8x8"
.fingerprint 0x189770542d901afa
.desc image bytes=288
.desc tap bytes=8 dim=[8, 8, 8]
.desc bias bytes=32
.desc result bytes=128
.vparam requant mult=[1073741824] shift=[38] min=0 max=127
.tensor x role=input dtype=int8 shape=[6, 6, 8] addr=0x0
.tensor w role=input dtype=int8 shape=[3, 3, 8, 8] addr=0x1000
.tensor b role=const dtype=int32 shape=[8] addr=0x2000
.tensor y role=output dtype=int8 shape=[4, 4, 8] addr=0x3000
.data addr=0x2000 hex="64000000ceffffff00000000190000009cffffff4b0000000a000000f6ffffff"
  .tag load
  li r1, 4096 || li r2, 8192
  li r3, 512 || li r4, 1024
  li r5, 12288 || li r6, 2048
  dma.load desc=image src=r0 dst=r0 flag=f1
  dma.load desc=bias src=r2 dst=r3 flag=f1
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0
  mxu.wload mxu=0 || wait f1, 2
  wait f2
  mxu.wload mxu=0 || mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=int8 swap=1
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0 || mxu.matmul mxu=0 src=r0+48 dst=r0+4 rows=4 dtype=int8
  mxu.matmul mxu=0 src=r0+96 dst=r0+8 rows=4 dtype=int8
  mxu.matmul mxu=0 src=r0+144 dst=r0+12 rows=4 dtype=int8
  mxu.wload mxu=0 || mxu.matmul mxu=0 src=r0+8 dst=r0+0 rows=4 dtype=int8 acc=1 swap=1
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0 || mxu.matmul mxu=0 src=r0+56 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+104 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+152 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.wload mxu=0 || mxu.matmul mxu=0 src=r0+16 dst=r0+0 rows=4 dtype=int8 acc=1 swap=1
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0 || mxu.matmul mxu=0 src=r0+64 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+112 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+160 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.wload mxu=0 || mxu.matmul mxu=0 src=r0+48 dst=r0+0 rows=4 dtype=int8 acc=1 swap=1
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0 || mxu.matmul mxu=0 src=r0+96 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+144 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+192 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.wload mxu=0 || mxu.matmul mxu=0 src=r0+56 dst=r0+0 rows=4 dtype=int8 acc=1 swap=1
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0 || mxu.matmul mxu=0 src=r0+104 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+152 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+200 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.wload mxu=0 || mxu.matmul mxu=0 src=r0+64 dst=r0+0 rows=4 dtype=int8 acc=1 swap=1
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0 || mxu.matmul mxu=0 src=r0+112 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+160 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+208 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.wload mxu=0 || mxu.matmul mxu=0 src=r0+96 dst=r0+0 rows=4 dtype=int8 acc=1 swap=1
  addi r1, r1, 64 || dma.wfifo desc=tap src=r1 mxu=0 || mxu.matmul mxu=0 src=r0+144 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+192 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+240 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.wload mxu=0 || mxu.matmul mxu=0 src=r0+104 dst=r0+0 rows=4 dtype=int8 acc=1 swap=1
  mxu.matmul mxu=0 src=r0+152 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+200 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+248 dst=r0+12 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+112 dst=r0+0 rows=4 dtype=int8 acc=1 swap=1
  mxu.matmul mxu=0 src=r0+160 dst=r0+4 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+208 dst=r0+8 rows=4 dtype=int8 acc=1
  mxu.matmul mxu=0 src=r0+256 dst=r0+12 rows=4 dtype=int8 acc=1 flag=f2
  .tag requant
  .tag conv
  vec.add dst=acc[r0+0] a=acc[r0+0] b=ub[r3+0] rows=16 dt=int32 bcast=1 flag=f3
  wait f3
  vec.rescale dst=ub[r6+0] a=acc[r0+0] rows=16 param=requant flag=f4
  wait f4
  dma.store desc=result src=r6 dst=r5 flag=f5
  wait f5
  halt
