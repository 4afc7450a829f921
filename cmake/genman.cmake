cmake_policy(SET CMP0053 NEW)
# Splice the generated ENVIRONMENT section into ringsock(7).
file(READ "${IN}" page)
file(READ "${PART}" env)
string(REPLACE "%%ENVIRONMENT%%\n" "${env}" page "${page}")
string(REPLACE "%%VERSION%%" "${VERSION}" page "${page}")
file(WRITE "${OUT}" "${page}")
