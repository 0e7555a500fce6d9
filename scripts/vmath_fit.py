"""Derives the two f32 polynomials of erf in codegen/llvm/vmath.c: relative
least-squares fits on Chebyshev nodes, coefficients rounded to f32 and printed in
hexadecimal as the C source writes them.
  erf(x) / x           on |x| <= 1, a polynomial in x^2 of degree 5
  erfc(x) e^(x^2)      on 1 <= x <= 4, a polynomial in 1/x of degree 8
Run with a Python that has NumPy (Debian's /usr/bin/python3 with python3-numpy)."""
import numpy as np
from math import erf, erfc, exp, sqrt, pi
def cheb_nodes(a,b,n):
    k=np.arange(n); return (a+b)/2+(b-a)/2*np.cos((2*k+1)*np.pi/(2*n))
def fit(f, a, b, var, deg):
    x=cheb_nodes(a,b,800); y=np.array([f(v) for v in x])
    V=np.vander(var(x),deg+1,increasing=True)
    c,*_=np.linalg.lstsq(V/y[:,None], np.ones_like(y), rcond=None)
    return [float(np.float32(v)) for v in c]
small=fit(lambda v: erf(v)/v if v>0 else 2/sqrt(pi), 0.0, 1.0, lambda x:x*x, 5)
large=fit(lambda v: erfc(v)*exp(v*v), 1.0, 4.0, lambda x:1/x, 8)
print('erf small:', ', '.join(v.hex() for v in small))
print('erf large:', ', '.join(v.hex() for v in large))
