# expect: 2:18: li and addi both write r5 in one bundle
li r5, 1 || addi r5, r0, 2
