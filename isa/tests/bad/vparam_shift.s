# expect: 2:27: shift = 70 out of range [2, 62]
.vparam q mult=[1] shift=[70]
