#!/usr/bin/env bash
# tests/build/test_structure.sh: the tree keeps its shape (tests/build/structure.py): no product file
# over 900 lines, no function over 150, no two files of one folder calling each other both ways.
set -euo pipefail
: "${top_srcdir:?}" "${top_builddir:?}"
command -v nm >/dev/null || { echo "needs nm (binutils)"; exit 77; }
exec "${PYTHON:-python3}" "$top_srcdir/tests/build/structure.py" "$top_srcdir" "$top_builddir"
