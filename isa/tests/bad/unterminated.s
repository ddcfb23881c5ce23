# expect: 2:6: unterminated string
.tag "oops
