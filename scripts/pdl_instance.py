#!/usr/bin/env python3
"""Writes one instance of a PDL kernel as a kernel of its own, for `perfc lib`.

perfc lib names each library function after a kernel and builds it with the
kernel's default dtypes and the unnamed schedule blocks, while stdlib/ holds one
kernel per operation whose dtypes are parameters and whose GPU schedules are named
variants (docs/language.md).  A library that wants, say, an f16 GEMM with the `tc`
schedule under the name gemm_tc_f16 builds it from this script's output:

    pdl_instance.py stdlib/gemm.pdl gemm gemm_tc_f16 --variant tc T=f16 M=4096 N=4096 K=4096

The kernel's text is copied with NAME=VALUE as the new defaults of its size
parameters and its dtype parameters written out (`in A: T[M, K]` becomes `in A:
f16[M, K]`), so the output is plain PDL that any perfc reads, older ones included;
the schedule blocks of the variant asked for (or, without --variant, the unnamed
ones) whose `when` guard holds are copied for the new name, without their `as`
and `when` clauses.  Nothing else of the file is copied: the output has one
kernel, and stdlib/ remains the one source of its text.
"""
import re
import sys


def blocks(text, head):
    """(start, end) of every top-level block whose first line matches head."""
    out = []
    for m in re.finditer(head, text, re.M):
        end = text.index("\n}\n", m.start()) + 3
        out.append((m.start(), end, m))
    return out


def main(argv):
    args = [a for a in argv[1:]]
    variant = None
    if "--variant" in args:
        i = args.index("--variant")
        variant = args[i + 1]
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit("usage: pdl_instance.py FILE KERNEL NEWNAME [--variant V] [NAME=VALUE...]")
    path, kernel, new = args[:3]
    values = dict(a.split("=", 1) for a in args[3:])
    text = open(path).read()
    ks = blocks(text, r"^kernel %s\((.*)\) \{$" % re.escape(kernel))
    if len(ks) != 1:
        sys.exit("%s: no kernel %s" % (path, kernel))
    s, e, m = ks[0]
    params, dtypes = [], {}
    for p in m.group(1).split(","):
        name, _, default = (x.strip() for x in p.partition("="))
        value = values.pop(name, default)
        if re.fullmatch(r"[A-Za-z_]\w*", value or "0"):
            dtypes[name] = value          # a dtype parameter: written into the text below
        else:
            params.append("%s = %s" % (name, value) if value else name)
    if values:
        sys.exit("kernel %s has no parameter %s" % (kernel, ", ".join(values)))
    body = text[m.end():e]
    for name, dt in dtypes.items():
        body = re.sub(r"(:\s*)%s(\s*[\[\n])" % re.escape(name), r"\g<1>%s\2" % dt, body)
    out = ["kernel %s(%s) {" % (new, ", ".join(params)) + body]
    found = False
    for s, e, m in blocks(text, r"^schedule %s( for [\w\"-]+)?(.*)\{$" % re.escape(kernel)):
        rest = m.group(2)
        va = re.search(r"\bas (\w+)", rest)
        if (va.group(1) if va else None) != variant:
            continue
        wh = re.search(r"\bwhen (\w+) in \[([^]]*)\]", rest)
        if wh and dtypes.get(wh.group(1)) not in [x.strip() for x in wh.group(2).split(",")]:
            continue                      # its guard does not hold for these dtypes
        found = True
        out.append("schedule %s%s {" % (new, m.group(1) or "") + text[m.end():e])
    if variant and not found:
        sys.exit("%s: kernel %s has no schedule variant %s for these dtypes" % (path, kernel, variant))
    sys.stdout.write("\n".join(out))


main(sys.argv)
