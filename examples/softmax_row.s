# Softmax over each of 4 rows of 8 fp32 values (tiny-8x8, 8 lanes):
#   y = exp(x - max(x)) / sum(exp(x - max(x)))
# Row reductions broadcast their result to every lane, so the subtraction and the final
# scaling are plain elementwise operations. Each step waits for the previous one: the
# vector unit does not forward results between operations (docs/microarch.md).
.config tiny-8x8
.tensor x role=input dtype=fp32 shape=[4, 8] addr=0x000
.tensor y role=output dtype=fp32 shape=[4, 8] addr=0x100
.desc rows bytes=128                                   # 4 rows x 8 lanes x 4 bytes

.tag softmax
  dma.load desc=rows src=r0 dst=r0 flag=f1
  li r1, 0x100 || wait f1
  vec.rmax dst=ub[r0+128] a=ub[r0+0] rows=4 dt=fp32 flag=f2                # m = max(x)
  wait f2
  vec.sub dst=ub[r0+256] a=ub[r0+0] b=ub[r0+128] rows=4 dt=fp32 flag=f2    # x - m
  wait f2
  vec.exp dst=ub[r0+384] a=ub[r0+256] rows=4 dt=fp32 flag=f2               # e = exp(x - m)
  wait f2
  vec.rsum dst=ub[r0+512] a=ub[r0+384] rows=4 dt=fp32 odt=fp32 flag=f2     # s = sum(e)
  wait f2
  vec.recip dst=ub[r0+640] a=ub[r0+512] rows=4 dt=fp32 flag=f2             # 1 / s
  wait f2
  vec.mul dst=ub[r0+768] a=ub[r0+384] b=ub[r0+640] rows=4 dt=fp32 flag=f2  # e / s
  wait f2
  li r2, 768
  dma.store desc=rows src=r2 dst=r1 flag=f3
  wait f3
  halt
