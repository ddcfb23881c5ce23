# expect: 2:15: positional operands must come before name=value operands
wait flag=f1, 3
