# expect: 2:4: register r32 does not exist
li r32, 1
