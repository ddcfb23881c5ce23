# expect: 2:72: values nested more than 32 deep
li r1, - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - 5
