# expect: 2:45: .const w: shape holds 4 bytes of int8 but 3 were given
.const w dtype=int8 shape=[4] addr=0 values=[1, 2, 3]
