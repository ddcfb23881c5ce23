# expect: 2:25: li needs the scalar (s0 and s1) slot
li r1, 1 || li r2, 2 || li r3, 3
