# expect: 2:1: label 'r3' looks like a register
r3: halt
