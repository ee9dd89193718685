# cmake -DIN=FILE -DOUT=FILE.c -DNAME=symbol -P embed.cmake: FILE's bytes as a C array (NAME, NAME_len), so the
# report's script, style and chart library are part of the surge binary and its pages need nothing beside them.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE ${OUT} "/* generated from ${IN} by report/embed.cmake */\n"
                  "const unsigned char ${NAME}[] = {${body}0};\n"
                  "const unsigned long ${NAME}_len = ${bytes};\n")
