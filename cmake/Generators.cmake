# The lexer (re2c) and the parser (Lemon) are generated into ${CMAKE_BINARY_DIR}/gen.
find_program(RE2C re2c REQUIRED)
find_program(LEMON lemon REQUIRED)
find_file(LEMPAR lempar.c PATHS /usr/share/lemon /usr/local/share/lemon /usr/share NO_DEFAULT_PATH REQUIRED)
set(GEN ${CMAKE_BINARY_DIR}/gen)
file(MAKE_DIRECTORY ${GEN})
add_custom_command(
  OUTPUT ${GEN}/lexer.c
  COMMAND ${RE2C} -W --no-generation-date -o ${GEN}/lexer.c ${CMAKE_SOURCE_DIR}/parser/lexer.re
  DEPENDS ${CMAKE_SOURCE_DIR}/parser/lexer.re ${GEN}/grammar.h
  COMMENT "re2c parser/lexer.re")
add_custom_command(
  OUTPUT ${GEN}/grammar.c ${GEN}/grammar.h
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/parser/grammar.y ${GEN}/grammar.y
  COMMAND ${LEMON} -q -T${LEMPAR} ${GEN}/grammar.y
  DEPENDS ${CMAKE_SOURCE_DIR}/parser/grammar.y
  COMMENT "lemon parser/grammar.y")
set(PERFC_GENERATED_SOURCES ${GEN}/lexer.c ${GEN}/grammar.c)
