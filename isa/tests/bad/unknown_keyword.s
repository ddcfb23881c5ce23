# expect: 2:10: wait has no operand 'cnt'; its operands are: flag, count
wait f1, cnt=3
