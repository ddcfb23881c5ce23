# expect: 2:11: empty operation between
li r1, 1||
