# expect: 2:49: operand 'dtype' = fp32 is not allowed; allowed: int8, bf16
mxu.matmul mxu=0 src=r1+0 dst=r2+0 rows=4 dtype=fp32
