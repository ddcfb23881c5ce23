# expect: 2:61: field 'rows' = 0 out of range [1, 65535]
mxu.matmul mxu=0 src=r1+0 dst=r2+0 dtype=int8 stride=0 rows=0
