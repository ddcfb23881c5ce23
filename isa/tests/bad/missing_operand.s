# expect: 2:1: add is missing operand 'rs2'
add r1, r2
