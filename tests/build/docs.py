"""tests/build/docs.py: the documentation names only files that exist.

  docs.py SRCDIR

Reads README.md, doc/architecture.md, doc/tree.md and tests/README.md and takes every name in
backquotes or in a map line that looks like a source file or a path in the tree (a name ending in
.c, .h, .sh, .py, .mk, .am, .ac, .8, .txt, .conf, .service, or a path with a folder of the tree in
front). A path must exist from the top of the tree (or below the folder a map line stands in); a bare
file name must exist somewhere in the tree. The docs are read as a map: a name that is gone leads a
reader nowhere, so a file moved or renamed must take its mentions along.
Exit 0 when every name is found, 1 with one line per missing name otherwise."""
import os
import re
import sys

DOCS = ['README.md', 'doc/architecture.md', 'doc/tree.md', 'tests/README.md']
EXT = r'(?:c|h|sh|py|mk|am|ac|8|txt|conf|service|in|ok)'
# A file name, or a path of the tree: letters, digits, '_', '-', '.', '/', '*' (a glob).
NAME = re.compile(r'(?<![\w/.$-])((?:[\w*.-]+/)*[A-Za-z_*][\w*-]*(?:\.[\w*-]+)*\.' + EXT + r')(?![\w/])')
PATH = re.compile(r'(?<![\w/.$-])((?:[\w.-]+/)+[\w*.-]*)')
# Paths that name the installed system or another program's files, not the tree.
OUTSIDE = ('/', 'etc/xipsec', 'build/', 'usr/', 'lib/', 'run/', 'var/', 'dev/', 'proc/', 'sys/',
           'tmp/', 'net-snmp/', 'x86_64-linux-gnu/')
FOREIGN = {'swanctl.conf', 'strongswan.conf', 'snmpd.conf', 'ipsec.conf', 'config.h', 'utils.h',
           'net-snmp-config.h', 'intel-ipsec-mb.h', 'xipsec.env', 'xipsec_xdp.o', 'report.md',
           'gw1.conf'}
# Folders a short path may be written from (`xipsecd/dp_rx.c`, `unit/`).
NEAR = ('dataplane', 'dataplane/xipsecd', 'dataplane/engine', 'tests', 'snmpd', 'bench')
SKIP_DIRS = {'.git', '.deps', 'build', 'autom4te.cache'}  # at the top only


def tree_files(src):
    names, paths, folders = set(), set(), set()
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        if rel == '.':
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        dirs[:] = [d for d in dirs if d != '.git']
        for d in dirs:
            names.add(d)
            folders.add(d)
            paths.add(os.path.normpath(os.path.join(rel, d)))
        for f in files:
            names.add(f)
            paths.add(os.path.normpath(os.path.join(rel, f)))
            if f.endswith('.mk') or f == 'Makefile.am':
                # what the build makes counts too (bench/fwd-xipsecd, xipsec_xdp.o)
                text = open(os.path.join(root, f), encoding='utf-8').read()
                for word in re.findall(r'[\w./-]+/[\w.-]+', text):
                    paths.add(os.path.normpath(word))
                    names.add(os.path.basename(word))
    return names, paths, folders


def found(clean, base, names, paths):
    if '*' in clean:
        rx = re.compile('^' + re.escape(clean).replace(r'\*', '[^/]*') + '$')
        return any(rx.match(p) or rx.match(os.path.basename(p)) for p in paths)
    if '/' not in clean:
        return clean in names
    return any(os.path.normpath(os.path.join(b, clean)) in paths for b in (base, '') + NEAR)


def exists(name, base, names, paths):
    """A program or an automake test is named without the source it is built from, a unit without
    its .in."""
    clean = name.rstrip('/')
    return any(found(clean + ext, base, names, paths) for ext in ('', '.c', '.sh', '.py', '.in'))


def is_tree_path(name, folders):
    """A path counts when it ends like a file of the tree or starts with a folder of the tree:
    'ESP/AH' and '10.1.0.0/24' are prose."""
    if NAME.fullmatch(name):
        return True
    first = name.split('/')[0]
    return bool(first) and first in folders and first[0].islower()


def mentions(text):
    """(line number, name, folder of the map line it stands in)."""
    base = ''
    for n, line in enumerate(text.split('\n'), 1):
        m = re.match(r'^(\s*)([\w.-]+/(?:[\w.-]+/)*)\s', line)
        row = re.match(r'^\| `([\w./-]+/)`', line)
        if row:
            base = row.group(1)
        elif line.startswith('|') or not line.strip():
            base = '' if not line.startswith('  ') else base
        if m and not m.group(1):
            base = m.group(2)
        elif m and m.group(1) and base:
            base = os.path.join(base.split('/')[0], m.group(2))
        seen = set()
        for rx in (NAME, PATH):
            for mm in rx.finditer(line):
                name = mm.group(1)
                if name in seen or any(name.startswith(s) for s in seen):
                    continue
                seen.add(name)
                yield n, name, base


# Placeholders a reader fills in (tests/unit/test_NAME.c).
PLACEHOLDER = re.compile(r'(?:^|[/_.-])(?:NAME|FILE|DIR|PATH)(?:$|[/_.-])')


def main():
    src = sys.argv[1]
    names, paths, folders = tree_files(src)
    bad = []
    for doc in DOCS:
        path = os.path.join(src, doc)
        if not os.path.exists(path):
            bad.append(f'{doc}: missing')
            continue
        for n, name, base in mentions(open(path, encoding='utf-8').read()):
            if name.startswith(OUTSIDE) or os.path.basename(name.rstrip('/')) in FOREIGN:
                continue
            if name.startswith(('http', 'www.')) or '://' in name or name.count('.') > 3:
                continue
            if not is_tree_path(name, folders) or PLACEHOLDER.search(name):
                continue
            if not exists(name, base, names, paths):
                bad.append(f'{doc}:{n}: {name} is not in the tree')
    for line in bad:
        print(line)
    print(f'docs: {len(bad)} missing name(s)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
