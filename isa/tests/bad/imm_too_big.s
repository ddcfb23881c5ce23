# expect: 2:8: field 'imm' = 4294967296 out of range [-2147483648, 2147483647]
li r1, 0x100000000
