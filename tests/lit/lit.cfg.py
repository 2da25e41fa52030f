# -*- Python -*-
# The fmhajit lit suite: FileCheck tests of the CLI and of every stage.
#
# Substitutions: %fmhajit (the built binary), %python, %expect_exit N (runs
# the rest of the line and succeeds only if it exits with N), %ptxas (when
# found). Features: `ptxas` when NVIDIA's assembler is installed, for
# `%if ptxas %{ ... %}` lines. LLVM's tools (FileCheck, not, count, llc, opt,
# llvm-mc, ld.lld) come first on PATH.

import os
import shutil

import lit.formats

config.name = "fmhajit"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test", ".ll", ".mir", ".s"]
config.excludes = ["Inputs", "utils", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)

if not hasattr(config, "fmhajit_binary"):
    lit_config.fatal(
        "run lit on the build tree (lit -sv build/tests/lit), not on the "
        "source tree: the build's lit.site.cfg.py says where fmhajit is"
    )

# Tools of this build and of LLVM 22 first, then the usual PATH.
path = [config.fmhajit_bin_dir, config.llvm_tools_dir, os.environ.get("PATH", "")]
config.environment["PATH"] = os.pathsep.join(path)

utils = os.path.join(config.test_source_root, "utils")
config.substitutions.append(("%expect_exit", "sh " + os.path.join(utils, "expect-exit.sh")))
config.substitutions.append(("%fmhajit", config.fmhajit_binary))
config.substitutions.append(("%python", config.python_executable))

# NVIDIA's assembler checks the PTX we emit where the CUDA toolkit exists.
ptxas = shutil.which("ptxas") or shutil.which("ptxas", path="/usr/local/cuda/bin")
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
