# expect: 2:17: operand 'flag' given twice
signal f1, flag=f2
