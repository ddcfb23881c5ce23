# expect: 2:5: branch target 5 is past the last bundle (1)
jmp 5
halt
