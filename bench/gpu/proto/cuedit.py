"""Helpers the hand-edit scripts here share (mklazy.py, mkdecouple.py): generated CUDA
as a list of lines, one brace-delimited block at a time."""


def block_end(L, k):
    """The line that closes the block opened on line k (its braces balance there)."""
    depth, e = 0, k
    while True:
        depth += L[e].count('{') - L[e].count('}')
        if depth == 0 and '}' in L[e]:
            return e
        e += 1


def indent(line):
    """The leading white space of line."""
    return line[:len(line) - len(line.lstrip())]
