#!/bin/sh
# The Python package's tests (tests/python/test_package.py) with Debian's
# interpreter.  Skipped (exit 77) when python3-numpy is absent; the tests that
# need python3-torch skip themselves with a message when it is absent.
# ./build.sh test installs both.
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then
    echo "SKIP: python3-numpy is not installed (apt-get install python3-numpy; ./build.sh test installs it)"
    exit 77
fi
"$PY" -c 'import torch' 2>/dev/null || echo "note: python3-torch is not installed; the torch tests will be skipped"
cd "$RANKCERT_SOURCE" || exit 1
RANKCERT="$RANKCERT_EXE" PYTHONPATH="$RANKCERT_SOURCE/python" exec "$PY" -m unittest -v tests/python/test_package.py tests/python/test_audit.py tests/python/test_tools.py tests/python/test_untrusted.py
