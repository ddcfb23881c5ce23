# expect: 2:21: dim must be [count, src_stride, dst_stride]
.desc d bytes=4 dim=[2, 8]
