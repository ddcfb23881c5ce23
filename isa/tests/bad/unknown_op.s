# expect: 2:1: unknown operation 'ad'; did you mean
ad r1, r2, r3
