# expect: 2:15: field 'mxu' = 8 out of range [0, 7]
mxu.wload mxu=8
