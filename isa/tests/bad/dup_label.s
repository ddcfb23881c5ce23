# expect: 3:1: label 'a' is already defined at line 2
a: halt
a: halt
