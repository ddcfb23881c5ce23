# expect: 2:8: unexpected character '@'
li r1, @5
