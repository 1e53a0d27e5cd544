// SPDX-License-Identifier: GPL-2.0-or-later
// Why the PyTorch tests cannot run here ("" when they can): the ringsched.torch package was not
// built because configure found no usable PyTorch (python/Makefile.am). test_torch and
// test_torch_slurm are built everywhere and SKIP with this reason (RINGSCHED_SKIP), so that a
// machine without torch says so instead of running fewer tests in silence.
#pragma once

#include <unistd.h>

#include <string>

#include "process_util.h"

namespace ringsched_test {

inline std::string torch_missing(const std::string& python) {
  static const std::string why = [&]() -> std::string {
    if (access((std::string(RINGSCHED_BUILDDIR) + "/python/site/ringsched/torch/_ringrt.so").c_str(), R_OK) == 0)
      return "";
    const std::string install = " (scripts/install-deps.sh installs python3-torch, libtorch-dev, pybind11-dev)";
    if (python.empty() || python == ":" || access(python.c_str(), X_OK) != 0)
      return "the PyTorch integration was not built: no Python 3 interpreter" + install;
    std::string out;
    if (run(python + " -c 'import torch'", &out) != 0) {
      while (!out.empty() && out.back() == '\n') out.pop_back();
      return "the PyTorch integration was not built: torch is not importable by " + python + " (" +
             out.substr(out.rfind('\n') + 1) + ")" + install;
    }
    return "the PyTorch integration was not built: libtorch's C++ headers or pybind11 are missing (see configure's "
           "warning)" + install;
  }();
  return why;
}

}  // namespace ringsched_test
