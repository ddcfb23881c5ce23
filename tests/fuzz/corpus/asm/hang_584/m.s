# vtpu program: 45 bundles, container format 2
.config "tiny-16x16"
.fingerprint 0x5c6f49f11f2f15f5
.desc d0 bytes=192
.desc d1 bytes=8 src_off=1048576 dim=[6, 8, 32]
.desc d2 bytes=64 src_off=1052672 dst_off=261696
.desc d3 bytes=4 src_off=261312 dst_off=1056768 dim=[6, 64, 4]
.desc d4 bytes=4 src_off=1056768 dst_off=260160 dim=[6, 4, 64]
.desc d5 bytes=384 dst_off=260160
.desc d6 bytes=4 src_off=260160 dst_off=1060864 dim=[6, 64, 4]
.vparam p0 scale=[-1]
.vparam p1 scale=[1.2676506e+30]
.vparam p2 min=0 max=1
.vparam p3 scale=[1073741800] bias=[0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]
.tensor data role=input dtype=bf16 shape=[2, 3, 4] addr=0x100000
.tensor result role=output dtype=int32 shape=[2, 3, 1] addr=0x103000
.data addr=0x101000 hex="00000000000000000000000000000000000080ff000080ff000080ff000080ff000080ff000080ff000080ff000080ff000080ff000080ff000080ff000080ff"
loop r5, 0
  .tag "input data"
  dma.load desc=d0 src=r0 dst=r0 flag=f1
  wait f1
  dma.load desc=d1 src=r0 dst=r0 flag=f1
  wait f1
  .tag ArgMax_result
  li r1, 0 || li r2, 261760
  vec.cvt dst=ub[r2+0] a=ub[r1+0] rows=6 dt=bf16 odt=fp32 flag=f20
  wait f20
  dma.load desc=d2 src=r0 dst=r0 flag=f1
  wait f1
  li r1, 261760 || li r2, 261696
  vec.add dst=ub[r1+0] a=ub[r1+0] b=ub[r2+0] rows=6 dt=fp32 bcast=1 flag=f20
  wait f20
  li r3, 260544 || li r4, 260544
  vec.rmax dst=ub[r3+0] a=ub[r1+0] rows=6 dt=fp32 flag=f20
  wait f20
  li r1, 261760 || li r4, 260544
  li r3, 261312 || li r5, 261312
  vec.sub dst=ub[r1+0] a=ub[r4+0] b=ub[r1+0] rows=6 dt=fp32 flag=f20
  wait f20
  vec.affine dst=ub[r1+0] a=ub[r1+0] rows=6 dt=fp32 param=p1 flag=f20
  wait f20
  vec.affine dst=ub[r1+0] a=ub[r1+0] rows=6 dt=fp32 param=p1 flag=f20
  wait f20
  vec.clamp dst=ub[r1+0] a=ub[r1+0] rows=6 dt=fp32 param=p2 flag=f20
  wait f20
  vec.affine dst=ub[r1+0] a=ub[r1+0] rows=6 dt=fp32 param=p3 flag=f20
  wait f20
  vec.affine dst=ub[r1+0] a=ub[r1+0] rows=6 dt=fp32 param=p0 flag=f20
  wait f20
  vec.rmax dst=ub[r3+0] a=ub[r1+0] rows=6 dt=fp32 flag=f20
  wait f20
  li r5, 261312
  vec.affine dst=ub[r5+0] a=ub[r5+0] rows=6 dt=fp32 param=p0 flag=f20
  wait f20
  vec.cvt dst=ub[r5+0] a=ub[r5+0] rows=6 dt=fp32 odt=int32 flag=f20
  wait f20
  dma.store desc=d3 src=r0 dst=r0 flag=f1
  wait f1
  dma.load desc=d5 src=r0 dst=r0 flag=f1
  wait f1
  dma.load desc=d4 src=r0 dst=r0 flag=f1
  wait f1
  .tag "output result"
  dma.store desc=d6 src=r0 dst=r0 flag=f1
  wait f1
  halt
