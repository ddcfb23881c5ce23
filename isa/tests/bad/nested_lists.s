# expect: 2:63: values nested more than 32 deep
.const w dtype=int8 shape=[1] [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
