"""tests/build/structure.py: the shape rules of the tree, checked on the sources and the built objects.

  structure.py SRCDIR BUILDDIR

1. No product source file (outside tests/ and bench/) is over 900 lines.
2. No function of a product .c file is over 150 lines. Functions are found the way the tree writes
   them: the opening brace alone at column 0, the closing one alone at column 0.
3. Inside each product folder, no two files call each other both ways (one uses a symbol the other
   defines, and the other way round, read from the objects with nm). The packet path calls down:
   burst loop -> stage -> shared helpers. A pair listed in ALLOWED is a burst loop and a stage it
   dispatches to; it must say why. The list is empty: no such pair is needed today.
Exit 0 when every rule holds, 1 with one line per breach otherwise."""
import collections
import os
import subprocess
import sys

FOLDERS = ['sadb', 'dataplane/engine', 'dataplane/engine/crypto', 'dataplane/xipsecd', 'mobility',
           'ike', 'ipsecctl', 'metrics', 'snmpd']
MAX_FILE, MAX_FUNC = 900, 150
ALLOWED = set()  # {('dataplane/xipsecd', 'dp_burst', 'dp_in')}: none needed today


def sources(src):
    for folder in FOLDERS:
        d = os.path.join(src, folder)
        for name in sorted(os.listdir(d)):
            if name.endswith(('.c', '.h')):
                yield folder, name, os.path.join(d, name)


def long_functions(path):
    lines = open(path, encoding='utf-8').read().split('\n')
    start = None
    for i, line in enumerate(lines):
        if line == '{' and start is None:
            j = i - 1
            while j > 0 and (lines[j] == '' or lines[j][0] in ' \t'):
                j -= 1
            start = j
        elif line == '}' and start is not None:
            if i - start + 1 > MAX_FUNC:
                yield start + 1, i - start + 1, lines[start][:70]
            start = None


def symbols(obj):
    out = subprocess.run(['nm', obj], capture_output=True, text=True, check=True).stdout
    defs, uses = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'TDBRW':
            defs.add(f[2])
        elif len(f) == 2 and f[0] == 'U':
            uses.add(f[1])
    return defs, uses


def circles(src, build):
    for folder in FOLDERS:
        objs = collections.defaultdict(list)
        bdir = os.path.join(build, folder)
        if not os.path.isdir(bdir):
            continue
        for name in sorted(os.listdir(bdir)):
            # automake names objects TARGET-SOURCE.o (or SOURCE.o); the same source may be built
            # for several targets: one object each is enough.
            if not name.endswith('.o'):
                continue
            stem = name[:-2].split('-')[-1]
            if os.path.exists(os.path.join(src, folder, stem + '.c')):
                objs[stem].append(os.path.join(bdir, name))
        syms = {s: symbols(o[0]) for s, o in objs.items()}
        names = sorted(syms)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                ab = syms[a][1] & syms[b][0]
                ba = syms[b][1] & syms[a][0]
                if ab and ba and (folder, a, b) not in ALLOWED:
                    yield folder, a, b, sorted(ab)[:2], sorted(ba)[:2]


def main():
    src, build = sys.argv[1], sys.argv[2]
    bad = []
    for folder, name, path in sources(src):
        n = sum(1 for _ in open(path, encoding='utf-8'))
        if n > MAX_FILE:
            bad.append(f'{folder}/{name}: {n} lines (at most {MAX_FILE})')
        if name.endswith('.c'):
            for line, n, sig in long_functions(path):
                bad.append(f'{folder}/{name}:{line}: function of {n} lines (at most {MAX_FUNC}): {sig}')
    for folder, a, b, ab, ba in circles(src, build):
        bad.append(f'{folder}: {a}.c and {b}.c call each other ({a} uses {", ".join(ab)}; '
                   f'{b} uses {", ".join(ba)})')
    for line in bad:
        print(line)
    print(f'structure: {len(bad)} breach(es)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
