import kiln as kn, numpy as np, sys
sys.path.insert(0, 'tests')
import test_complex_views as t
for case in t.CASES:
    def f(x):
        m = kn
        leaves, y = case(kn)
        return y
    try:
        def g(x):
            class M: pass
            return None
        z = kn.tensor(t.Z)
        def body(z):
            y = z * 2
            y.real.mul_(3)
            y.imag[1:3] *= 2
            v = kn.view_as_real(y)
            v[0, 0] = 1.0
            return y
        print(kn.compile(body)(z), body(kn.tensor(t.Z)))
        break
    except Exception as e:
        print(type(e).__name__, e); break
