# expect: 2:49: int8 value = 200 out of range [-128, 127]
.const w dtype=int8 shape=[2] addr=0 values=[1, 200]
