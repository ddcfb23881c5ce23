# expect: 2:31: shape dimension = 0 out of range [1, 2147483647]
.const w dtype=int8 shape=[4, 0] addr=0 values=[1]
