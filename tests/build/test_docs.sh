#!/usr/bin/env bash
# tests/build/test_docs.sh: the documentation (README.md, doc/architecture.md, doc/tree.md,
# tests/README.md) names only files and folders that exist (tests/build/docs.py), so a file moved or
# renamed takes its mentions along. Checked in the repository: a distributed tarball leaves out
# folders the docs name (debian/, .ci/), so there is nothing to compare it with.
set -euo pipefail
: "${top_srcdir:?}"
if [ ! -e "$top_srcdir/.git" ]; then
	echo "test_docs: not a git checkout (a distributed tree): the docs are checked in the repository"
	exit 0
fi
exec "${PYTHON:-python3}" "$top_srcdir/tests/build/docs.py" "$top_srcdir"
