# expect: 2:7: .desc d needs bytes=N
.desc d dim=[2, 8, 8]
