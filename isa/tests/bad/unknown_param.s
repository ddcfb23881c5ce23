# expect: 2:56: unknown vector param (define it with .vparam) 'q'
vec.clamp dst=ub[r1+0] a=ub[r2+0] rows=1 dt=int8 param=q
