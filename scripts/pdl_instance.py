#!/usr/bin/env python3
"""Writes one instance of a PDL kernel as a kernel of its own, for `perfc lib`.

perfc lib names each library function after a kernel and builds it with the
kernel's default dtypes and the unnamed schedule blocks, while stdlib/ holds one
kernel per operation whose dtypes are parameters and whose GPU schedules are named
variants (docs/language.md).  A library that wants, say, an f16 GEMM with the `tc`
schedule under the name gemm_tc_f16 builds it from this script's output:

    pdl_instance.py stdlib/gemm.pdl gemm gemm_tc_f16 --variant tc T=f16 M=4096 N=4096 K=4096

The kernel's text is copied with NAME=VALUE as the new defaults of its size and
dtype parameters; the schedule blocks of the variant asked for (or, without
--variant, the unnamed ones) are copied for the new name without their `as`
clause (a `when` guard stays: it still decides whether the block applies).  Nothing else of the file is copied, so the output has one
kernel and one source of truth remains stdlib/.
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
    params = []
    for p in m.group(1).split(","):
        name = p.split("=")[0].strip()
        params.append("%s = %s" % (name, values.pop(name)) if name in values else p.strip())
    if values:
        sys.exit("kernel %s has no parameter %s" % (kernel, ", ".join(values)))
    out = ["kernel %s(%s) {" % (new, ", ".join(params)) + text[m.end():e]]
    found = False
    for s, e, m in blocks(text, r"^schedule %s( for [\w\"-]+)?(.*)\{$" % re.escape(kernel)):
        rest = m.group(2)
        va = re.search(r"\bas (\w+)", rest)
        if (va.group(1) if va else None) != variant:
            continue
        found = True
        guard = re.sub(r"\bas \w+", "", rest).strip()
        out.append("schedule %s%s%s {" % (new, m.group(1) or "", " " + guard if guard else "") + text[m.end():e])
    if variant and not found:
        sys.exit("%s: kernel %s has no schedule variant %s" % (path, kernel, variant))
    sys.stdout.write("\n".join(out))


main(sys.argv)
