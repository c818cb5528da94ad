#!/usr/bin/env python3
# tests/netns/unit_sandbox.py: runs a command under the parts of a unit's sandbox that setpriv and
# prlimit cannot give, as systemd would apply them: UMask= and SystemCallFilter=. For the netns tests
# that run the installed units' commands without systemd as PID 1 (units_common.sh). The filter is read out of the unit file: allow-list and deny-list lines in
# order (systemd's semantics: the first line decides the kind, later "~" lines take names out of an
# allow-list), groups expanded by `systemd-analyze syscall-filter`, numbers from the kernel's
# asm/unistd_64.h; a call outside it fails with SystemCallErrorNumber= (or kills the process, when
# none is set), only on x86-64 (SystemCallArchitectures=native). A unit with no filter runs
# unfiltered; one without UMask= under systemd's default 0022. A program built with the sanitizers
# (./configure --enable-asan) may also call ptrace: LeakSanitizer stops the process's threads with
# it at exit, which is the test build's doing, not the program's.
#   unit_sandbox.py UNIT-FILE COMMAND [ARGS...]
import ctypes
import errno
import os
import re
import shutil
import struct
import subprocess
import sys

UNISTD = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
AUDIT_ARCH_X86_64 = 0xC000003E
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
PR_SET_NO_NEW_PRIVS = 38
SYS_SECCOMP = 317
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_LOG = 2
# classic BPF opcodes
LD_W_ABS = 0x20
JEQ_K = 0x15
RET_K = 0x06


def expand(name, seen):
    """The syscall names of a group (recursively) or the name itself."""
    if not name.startswith("@"):
        return {name}
    if name in seen:
        return set()
    seen.add(name)
    out = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager", name],
                         check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines()[1:]:
        w = line.strip()
        if w and not w.startswith("#"):
            names |= expand(w, seen)
    return names


def unit_sandbox(path):
    """(allowed names or None, errno or None, umask) from the unit's [Service] lines."""
    allow, err, umask = None, None, 0o022
    for line in open(path):
        m = re.match(r"^SystemCallFilter=(.*)$", line.strip())
        if m:
            value = m.group(1).strip()
            deny = value.startswith("~")
            names = set()
            for w in value.lstrip("~").split():
                names |= expand(w, set())
            if allow is None:
                if deny:
                    sys.exit("unit_sandbox.py: a deny-list first is not supported")
                allow = names
            elif deny:
                allow -= names
            else:
                allow |= names
        m = re.match(r"^SystemCallErrorNumber=(\w+)$", line.strip())
        if m:
            err = getattr(errno, m.group(1))
        m = re.match(r"^UMask=([0-7]+)$", line.strip())
        if m:
            umask = int(m.group(1), 8)
    return allow, err, umask


def sanitized(command):
    """Whether the program links the AddressSanitizer runtime (the check build)."""
    path = command if "/" in command else shutil.which(command)
    try:
        with open(path, "rb") as f:
            return b"libasan.so" in f.read()
    except (OSError, TypeError):
        return False


def numbers(names):
    table = {}
    for line in open(UNISTD):
        m = re.match(r"#define __NR_(\w+)\s+(\d+)", line)
        if m:
            table[m.group(1)] = int(m.group(2))
    return sorted({table[n] for n in names if n in table})


def program(nrs, err):
    deny = SECCOMP_RET_ERRNO | err if err is not None else SECCOMP_RET_KILL_PROCESS
    ins = [(LD_W_ABS, 0, 0, 4),                         # seccomp_data.arch
           (JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
           (RET_K, 0, 0, deny),
           (LD_W_ABS, 0, 0, 0)]                         # seccomp_data.nr
    for nr in nrs:
        # a jump offset is one byte: each number answers on its own, not through one shared ALLOW
        ins += [(JEQ_K, 0, 1, nr), (RET_K, 0, 0, SECCOMP_RET_ALLOW)]
    ins.append((RET_K, 0, 0, deny))
    return b"".join(struct.pack("HBBI", *i) for i in ins), len(ins)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: unit_sandbox.py UNIT-FILE COMMAND [ARGS...]")
    allow, err, umask = unit_sandbox(sys.argv[1])
    os.umask(umask)
    if allow is not None:
        if sanitized(sys.argv[2]):
            allow.add("ptrace")
        code, n = program(numbers(allow), err)
        buf = ctypes.create_string_buffer(code)

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
        prog = SockFprog(n, ctypes.addressof(buf))
        libc = ctypes.CDLL(None, use_errno=True)
        # FLAG_LOG: a refused call shows in the kernel log (audit type 1326, its number)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) or \
           libc.syscall(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_LOG,
                        ctypes.byref(prog)):
            sys.exit("unit_sandbox.py: seccomp: " + os.strerror(ctypes.get_errno()))
    os.execvp(sys.argv[2], sys.argv[2:])


main()
