# expect: 2:8: malformed number '12ab'
li r1, 12ab
