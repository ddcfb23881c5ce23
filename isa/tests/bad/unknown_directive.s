# expect: 2:1: unknown directive '.section'
.section text
