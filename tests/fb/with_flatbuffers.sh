#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# with_flatbuffers.sh SCRIPT [ARGS...]: runs a Python test script with an
# interpreter that has python3-flatbuffers (the Debian package installs it
# for the system interpreter, which may not be the first python3 on PATH).
# Skips (77) when flatc or the module is missing. The chat and interop
# tests all run through it.
set -euo pipefail
# Nothing may be written into the source tree (chat_client.py is imported).
export PYTHONDONTWRITEBYTECODE=1
script=$1
shift
command -v flatc >/dev/null || { echo "SKIP: flatc not found (Debian flatbuffers-compiler)"; exit 77; }
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import flatbuffers' 2>/dev/null; then
    exec "$py" "$script" "$@"
  fi
done
echo "SKIP: no python3 with the flatbuffers module (Debian python3-flatbuffers)"
exit 77
