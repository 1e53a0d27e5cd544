#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""test_torch's comparisons of two runs of train_digits.py:
  compare.py params A.json B.json   -> "maxdiff X maxabs Y" over every parameter
  compare.py loss A.log B.log       -> "steps N maxdiff X first_step_over T" ('step loss world' lines;
                                       a step logged twice, after a restart, keeps its last value)
"""
import json
import sys


def params(a, b):
    pa, pb = json.load(open(a))["params"], json.load(open(b))["params"]
    if sorted(pa) != sorted(pb):
        print("different parameter names")
        return 1
    diff = big = 0.0
    for k in pa:
        if len(pa[k]) != len(pb[k]):
            print("different sizes for", k)
            return 1
        for x, y in zip(pa[k], pb[k]):
            diff, big = max(diff, abs(x - y)), max(big, abs(y))
    print("maxdiff %.3g maxabs %.3g" % (diff, big))
    return 0


def loss(a, b, tol=1e-5):
    def read(p):
        m = {}
        for line in open(p):
            f = line.split()
            if len(f) == 3:
                m[int(f[0])] = float(f[1])
        return m
    la, lb = read(a), read(b)
    common = sorted(set(la) & set(lb))
    diff, over = 0.0, -1
    for s in common:
        d = abs(la[s] - lb[s])
        if d > tol and over < 0:
            over = s
        diff = max(diff, d)
    print("steps %d maxdiff %.3g first_step_over %d" % (len(common), diff, over))
    return 0


if __name__ == "__main__":
    what, a, b = sys.argv[1:4]
    sys.exit(params(a, b) if what == "params" else loss(a, b))
