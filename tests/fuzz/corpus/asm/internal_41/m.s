# vtpu program: 18 bundles, container format 2
.config "tiny-8x8"
.fingerprint 0x189770542d901afa
.desc rows bytes=128
.tensor x role=input dtype=fp32 shape=[4, 0x7fffffff] addr=0x0
.tensor y role=output dtype=fp32 shape=[4, 8] addr=0x100
  .tag softmax
  dma.load desc=rows src=r0 dst=r0 flag=f1
  li r1, 256 || wait f1
  vec.rmax dst=ub[r0+128] a=ub[r0+0] rows=4 dt=fp32 flag=f2
  wait f2
  vec.sub dst=ub[r0+256] a=ub[r0+0] b=ub[r0+128] rows=4 dt=fp32 flag=f2
  wait f2
  vec.exp dst=ub[r0+384] a=ub[r0+256] rows=4 dt=fp32 flag=f2
  wait f2
  vec.rsum dst=ub[r0+512] a=ub[r0+384] rows=4 dt=fp32 odt=fp32 flag=f2
  wait f2
  vec.recip dst=ub[r0+640] a=ub[r0+512] rows=4 dt=fp32 flag=f2
  wait f2
  vec.mul dst=ub[r0+768] a=ub[r0+384] b=ub[r0+640] rows=4 dt=fp32 flag=f2
  wait f2
  li r2, 768
  dma.store desc=rows src=r2 dst=r1 flag=f3
  wait f3
  halt
