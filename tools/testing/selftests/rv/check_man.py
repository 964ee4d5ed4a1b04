#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Checks that the contract's copies agree (make check-man runs it).

rv(7) (man/rv.7) is the one place for semantics, module parameters and
errno tables; the uAPI header lists each command's errnos in one line; a
librv man page documents every errno its functions can return.  Fails,
naming what is missing, when:

 1. a module parameter (module_param*() in drivers/infiniband/ulp/rv/*.c)
    has no entry under rv(7)'s "Module parameters", or an entry there
    names no parameter;
 2. an errno named anywhere in a comment of the uAPI header does not
    appear in rv(7); the common errors of the header's first comment are
    not all in rv(7)'s "Conventions of the commands"; or the errnos of a
    struct's "Errors:" line differ from those after "Errors:" in rv(7)'s
    entry of the command taking that struct (both ways);
 3. an exported librv function (librv.map) has no page under
    lib/librv/man (a ".so" link page counts), or its page's ERRORS
    section lacks an errno the function can return: every -EXXX literal
    in its body and in the bodies of the lib/librv/src functions it calls,
    and the errnos of rv(7)'s entry for every RV_IOCTL_* those bodies
    issue.  A page may waive one with a line
        .\\" check-man: not returned: EINTR ENXIO (why)
    (a waiver for an errno that is not required is an error too).

Errno names are those Python's errno module knows, so words such as
EXACT or EPOLLIN are not taken for errnos.

usage: check_man.py [REPO_ROOT]
"""
import errno
import glob
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
RV7 = "man/rv.7"
HEADER = "include/uapi/rdma/rv_user_ioctls.h"
MODULE_SRC = "drivers/infiniband/ulp/rv/*.c"
LIBRV = "lib/librv"
# Every name errno defines: errorcode keeps one name per number, and
# EOPNOTSUPP (ENOTSUP's alias on Linux) would not be taken for an errno.
ERRNOS = set(errno.errorcode.values()) | {
    n for n in dir(errno) if re.fullmatch(r"E[A-Z0-9]+", n)}
problems = []


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def errnos(text):
    return {w for w in re.findall(r"\bE[A-Z0-9]+\b", text) if w in ERRNOS}


def section(page, name, level="SS"):
    """Text of a .SH/.SS section of a man page, up to the next one."""
    m = re.search(r"^\.%s \"?%s\"?\n(.*?)(?=^\.S[HS] |\Z)" %
                  (level, re.escape(name)), page, re.M | re.S)
    return m.group(1) if m else ""


def fmt(names):
    return ", ".join(sorted(names))


# ---- rv(7) -----------------------------------------------------------
rv7 = read(RV7)

# Module parameters: the word after .B/.BR on the line after each .TP.
rv7_params = set(re.findall(r"^\.TP\n\.BR? (\w+)",
                            section(rv7, "Module parameters"), re.M))

# Command entries: ".TP\n.BR RV_IOCTL_X ..." up to the next one.
rv7_cmds = {}
cmds_text = section(rv7, "Commands")
parts = re.split(r"^\.TP\n\.BR? (RV_IOCTL_\w+).*\n", cmds_text, flags=re.M)
for name, body in zip(parts[1::2], parts[2::2]):
    err_text = body.split("Errors:", 1)[1] if "Errors:" in body else ""
    rv7_cmds[name] = (errnos(err_text), re.findall(r"those of (\w+)",
                                                   err_text))
for name, (errs, includes) in rv7_cmds.items():
    for inc in includes:
        errs |= rv7_cmds.get("RV_IOCTL_" + inc, (set(), []))[0]
rv7_common = errnos(section(rv7, "Conventions of the commands"))

# ---- 1. module parameters ----------------------------------------------
src_params = set()
for path in sorted(glob.glob(os.path.join(ROOT, MODULE_SRC))):
    with open(path, encoding="utf-8") as f:
        src_params |= set(re.findall(
            r"\bmodule_param(?:_named|_cb|_string|_array)?\(\s*(\w+)",
            f.read()))
for p in sorted(src_params - rv7_params):
    problems.append(f"{RV7}: module parameter {p} is not documented "
                    f"(no .TP entry under \"Module parameters\")")
for p in sorted(rv7_params - src_params):
    problems.append(f"{RV7}: documents module parameter {p}, which "
                    f"{MODULE_SRC} does not define")

# ---- 2. uAPI header ----------------------------------------------------
hdr = read(HEADER)
comments = re.findall(r"/\*.*?\*/", hdr, re.S)
for e in sorted(errnos(" ".join(comments)) - errnos(rv7)):
    problems.append(f"{RV7}: {e}, named in {HEADER}, is not documented")
if comments:
    top = comments[1] if comments[0].startswith("/* SPDX") else comments[0]
    m = re.search(r"Errors of every command:(.*?)\n", top)
    hdr_common = errnos(m.group(1)) if m else set()
    for e in sorted(hdr_common - rv7_common):
        problems.append(f"{RV7}: common error {e} of {HEADER} is missing "
                        f"from \"Conventions of the commands\"")

# A struct's comment is the one right before "struct rv_x {"; its command
# is the RV_IOCTL_* defined with _IO() after the struct, before the next.
hdr_cmds = {}
for m in re.finditer(r"(/\*(?:(?!\*/).)*\*/)\nstruct rv_\w+ \{.*?\n\};",
                     hdr, re.S):
    comment = m.group(1)
    after = re.split(r"\nstruct rv_\w+ \{", hdr[m.end():], 1)[0]
    ioctl = re.search(r"#define (RV_IOCTL_\w+) _IO\(", after)
    if not ioctl or "Errors:" not in comment:
        continue
    text = comment.split("Errors:", 1)[1]
    errs = errnos(text)
    for inc in re.findall(r"and (\w+)'s", text):
        errs |= hdr_cmds.get("RV_IOCTL_" + inc, set())
    if "common ones only" in text:
        errs = set()
    hdr_cmds[ioctl.group(1)] = errs
for cmd in sorted(set(re.findall(r"#define (RV_IOCTL_\w+) _IO\(", hdr))):
    if cmd not in rv7_cmds:
        problems.append(f"{RV7}: no entry for {cmd} under \"Commands\"")
        continue
    if cmd not in hdr_cmds:
        problems.append(f"{HEADER}: struct of {cmd} has no \"Errors:\"")
        continue
    rv7_errs = rv7_cmds[cmd][0]
    if hdr_cmds[cmd] - rv7_errs:
        problems.append(f"{RV7}: {cmd}: {fmt(hdr_cmds[cmd] - rv7_errs)} "
                        f"listed in {HEADER} but not after \"Errors:\"")
    if rv7_errs - hdr_cmds[cmd]:
        problems.append(f"{HEADER}: {cmd}: {fmt(rv7_errs - hdr_cmds[cmd])}"
                        f" listed in {RV7} but not in the struct's "
                        f"\"Errors:\"")

# ---- 3. librv ----------------------------------------------------------
exported = re.findall(r"^\s+(rv_\w+);", read(f"{LIBRV}/librv.map"), re.M)

# Function bodies of lib/librv/src: kernel style, "{" and "}" at column 0.
bodies = {}
for path in sorted(glob.glob(os.path.join(ROOT, LIBRV, "src", "*.c"))):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    for m in re.finditer(r"^(?:static )?[a-z_].*?\b(\w+)\([^;{]*?\)\n"
                         r"\{\n(.*?)^\}", src, re.M | re.S):
        bodies[m.group(1)] = m.group(2)


def returned(func):
    """Errnos func can return: its own literals, its ioctls', callees'."""
    seen, todo, errs = set(), [func], set()
    while todo:
        f = todo.pop()
        if f in seen or f not in bodies:
            continue
        seen.add(f)
        body = bodies[f]
        errs |= set(re.findall(r"-(E[A-Z0-9]+)\b", body))
        for cmd in re.findall(r"\b(RV_IOCTL_\w+)\b", body):
            errs |= rv7_cmds.get(cmd, (set(), []))[0]
        todo += [c for c in re.findall(r"\b(\w+)\(", body) if c in bodies]
    return errs


def page_of(func):
    """(path, text) of func's page, following one .so link."""
    path = f"{LIBRV}/man/{func}.3"
    if not os.path.exists(os.path.join(ROOT, path)):
        return None, None
    text = read(path)
    m = re.match(r"\.so man3/(\S+)", text)
    if m:
        path = f"{LIBRV}/man/{m.group(1)}"
        if not os.path.exists(os.path.join(ROOT, path)):
            return None, None
        text = read(path)
    return path, text


required = {}
for func in exported:
    if func not in bodies:
        problems.append(f"{LIBRV}/librv.map: {func} is not defined in "
                        f"{LIBRV}/src")
    path, text = page_of(func)
    if not path:
        problems.append(f"{LIBRV}/man/{func}.3: missing (exported by "
                        f"librv.map)")
        continue
    if not re.search(r"\b%s\b" % func, section(text, "NAME", "SH")):
        problems.append(f"{path}: NAME does not list {func}")
    required.setdefault(path, {})
    for e in returned(func):
        required[path].setdefault(e, []).append(func)

for path, need in sorted(required.items()):
    text = read(path)
    documented = errnos(section(text, "ERRORS", "SH"))
    waived = set()
    for line in re.findall(r'^\.\\" check-man: not returned:(.*)$', text,
                           re.M):
        waived |= errnos(line.split("(")[0])
    for e in sorted(waived - set(need)):
        problems.append(f"{path}: waives {e}, which none of its functions "
                        f"can return")
    for e in sorted(set(need) - documented - waived):
        problems.append(f"{path}: ERRORS lacks {e} (returned by "
                        f"{', '.join(sorted(set(need[e])))})")

for p in problems:
    print(p)
if problems:
    print(f"check_man: {len(problems)} problem(s)")
    sys.exit(1)
print(f"check_man: {len(src_params)} parameters, {len(rv7_cmds)} commands, "
      f"{len(exported)} librv functions: rv(7), {HEADER} and librv's pages "
      f"agree")
