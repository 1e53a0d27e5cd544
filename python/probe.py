# SPDX-License-Identifier: GPL-2.0-or-later
# Run by configure with the chosen interpreter: prints what the ringsched.torch extension is built
# with, one item a line (torch version, C++ flags, link flags), or exits 1 with the reason on
# stderr. A separate file because configure.ac's m4 quoting would mangle inline Python.
import sys
import sysconfig

try:
    import torch
    from torch.utils import cpp_extension
except Exception as e:  # noqa: BLE001 -- any import failure means "no torch"
    sys.stderr.write("cannot import torch: %s\n" % e)
    sys.exit(1)

includes = cpp_extension.include_paths() + [sysconfig.get_paths()["include"]]
abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
print(torch.__version__.split("+")[0])
print(" ".join(["-I" + p for p in includes] + ["-D_GLIBCXX_USE_CXX11_ABI=%d" % abi]))
print(" ".join("-L%s -Wl,-rpath,%s" % (p, p) for p in cpp_extension.library_paths()))
