#!/usr/bin/env python3
"""FileCheck-style golden tests for what perfc prints: IR after a pass, emitted
CUDA C, LLVM IR.  A case is one PDL file carrying its own expectations, so a test
states the few lines that matter instead of a whole output that every unrelated
change would rewrite.

Directives, in PDL comments (`#`; `//` is also read, and such lines are blanked
before perfc sees the file, so line numbers in diagnostics stay right):
  # RUN: ARGS          perfc FILE ARGS is run (several RUN lines: outputs joined)
  # EXIT: N            the expected exit status of every run (default 0)
  # CHECK: TEXT        a later line contains TEXT
  # CHECK-NEXT: TEXT   the line right after the previous match contains TEXT
  # CHECK-NOT: TEXT    no line between the previous match and the next one does
  # CHECK-COUNT-N: TEXT  exactly N lines of the whole output contain TEXT
TEXT is matched literally, except that {{RE}} is a Python regular expression.
In a RUN line %t is a directory of the case's own, removed afterwards (a tuning
database: `--db %t/tune.db`).
Usage: check.py PERFC FILE.pdl   (exit 0 pass, 1 fail, with the reason)."""
import os
import re
import shlex
import subprocess
import sys
import tempfile

DIRECTIVE = re.compile(r'^\s*(?:#|//)\s*(RUN|EXIT|CHECK|CHECK-NEXT|CHECK-NOT|CHECK-COUNT-(\d+)):\s?(.*)$')


def pattern(text):
    """TEXT with {{re}} parts -> a compiled regular expression searched in a line."""
    out, pos = [], 0
    for m in re.finditer(r'\{\{(.*?)\}\}', text):
        out.append(re.escape(text[pos:m.start()]))
        out.append('(?:' + m.group(1) + ')')
        pos = m.end()
    out.append(re.escape(text[pos:]))
    return re.compile(''.join(out).strip() or r'^$')


def fail(path, lineno, msg, output):
    print(f'{path}:{lineno}: {msg}')
    print('--- output ---')
    print(output, end='' if output.endswith('\n') else '\n')
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        print('usage: check.py PERFC FILE.pdl', file=sys.stderr)
        sys.exit(2)
    perfc, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        lines = f.read().split('\n')
    runs, checks, want_exit, slashes = [], [], 0, False
    for i, line in enumerate(lines):
        m = DIRECTIVE.match(line)
        if not m:
            continue
        kind, count, text = m.group(1), m.group(2), m.group(3)
        slashes |= line.lstrip().startswith('//')
        if kind == 'RUN':
            runs.append(shlex.split(text))
        elif kind == 'EXIT':
            want_exit = int(text)
        else:
            checks.append((i + 1, 'CHECK-COUNT' if count else kind, int(count or 0), text))
    if not runs or not checks:
        print(f'{path}: a case needs a RUN line and at least one CHECK line')
        sys.exit(1)
    src = path
    tmp = None
    if slashes:  # perfc reads `#` comments only: blank the `//` directive lines
        tmp = tempfile.NamedTemporaryFile('w', suffix='.pdl', delete=False)
        tmp.write('\n'.join('' if line.lstrip().startswith('//') else line for line in lines))
        tmp.close()
        src = tmp.name
    output = ''
    scratch = tempfile.TemporaryDirectory(prefix='perfc_check_')
    try:
        for args in runs:
            args = [a.replace('%t', scratch.name) for a in args]
            r = subprocess.run([perfc, src] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=120)
            output += r.stdout
            if r.returncode != want_exit:
                fail(path, 0, f'perfc {" ".join(args)} exited {r.returncode}, expected {want_exit}', r.stdout)
    finally:
        scratch.cleanup()
        if tmp:
            os.unlink(tmp.name)
    if tmp:
        output = output.replace(tmp.name, path)
    out = output.split('\n')
    pos = 0          # first line a CHECK may match
    last = -1        # line of the previous match
    pending_not = []
    for lineno, kind, count, text in checks:
        rx = pattern(text)
        if kind == 'CHECK-NOT':
            pending_not.append((lineno, text, rx))
            continue
        if kind == 'CHECK-COUNT':
            n = sum(1 for line in out if rx.search(line))
            if n != count:
                fail(path, lineno, f'CHECK-COUNT-{count}: "{text}" matched {n} lines', output)
            continue
        if kind == 'CHECK-NEXT':
            if last < 0 or last + 1 >= len(out) or not rx.search(out[last + 1]):
                got = out[last + 1] if 0 <= last + 1 < len(out) else '<end of output>'
                fail(path, lineno, f'CHECK-NEXT: "{text}" not on the next line, which is: {got}', output)
            hit = last + 1
        else:
            hit = next((j for j in range(pos, len(out)) if rx.search(out[j])), -1)
            if hit < 0:
                fail(path, lineno, f'CHECK: "{text}" not found after line {pos} of the output', output)
        for nl, ntext, nrx in pending_not:
            for j in range(pos, hit):
                if nrx.search(out[j]):
                    fail(path, nl, f'CHECK-NOT: "{ntext}" found at output line {j + 1}: {out[j]}', output)
        pending_not = []
        last, pos = hit, hit + 1
    for nl, ntext, nrx in pending_not:
        for j in range(pos, len(out)):
            if nrx.search(out[j]):
                fail(path, nl, f'CHECK-NOT: "{ntext}" found at output line {j + 1}: {out[j]}', output)


if __name__ == '__main__':
    main()
