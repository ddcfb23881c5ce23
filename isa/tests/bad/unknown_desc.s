# expect: 2:15: unknown DMA descriptor (define it with .desc) 'tile'
dma.load desc=tile src=r1 dst=r2
