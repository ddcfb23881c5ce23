# expect: 2:25: operand 'a' must be a memory address like ub[r1+64]
vec.relu dst=ub[r1+0] a=r2+0 rows=1 dt=int8
