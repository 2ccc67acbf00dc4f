# SPDX-License-Identifier: MIT
# Instruction-set baseline. x86-64-v2 (SSE4.2, POPCNT, CMPXCHG16B) is what
# every x86-64 server of the last decade has; other architectures build for
# the compiler's default target, so the same sources build for aarch64
# (tests/cross checks that on every `make test`).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  add_compile_options(-march=x86-64-v2)
endif()
