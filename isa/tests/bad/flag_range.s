# expect: 2:6: flag f64 does not exist; flags are f0..f63
wait f64
