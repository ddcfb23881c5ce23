# expect: 2:42: dma.store needs the dma slot, which this bundle already uses
dma.load desc=d src=r1 dst=r2 flag=f1 || dma.store desc=d src=r1 dst=r2
.desc d bytes=4
