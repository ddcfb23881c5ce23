# expect: 2:9: add: operand 'rs1' must be a register r0..r31
add r1, 5, r2
