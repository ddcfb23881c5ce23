# Embeds a binary file as a C++ byte array: cmake -DINPUT=... -DOUTPUT=... -DSYMBOL=... -P
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
math(EXPR size "${n} / 2")
file(WRITE ${OUTPUT} "// Generated from ${INPUT}; do not edit.\n#include <cstddef>\n#include <cstdint>\nnamespace vtpu::models::embedded {\nextern const uint8_t ${SYMBOL}[] = {${bytes}};\nextern const size_t ${SYMBOL}_size = ${size};\n}\n")
