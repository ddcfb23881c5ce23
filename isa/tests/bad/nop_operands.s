# expect: 2:5: nop takes no operands
nop r1
