"""Helpers of the allocator-core tests: build the core_* programs into a tmp
dir once per session, run them with libcorral.so preloaded over a chosen base
allocator, read the statistics."""

import json
import re
import os
import subprocess
from pathlib import Path

from corral import paths
from corral.allocators import BASE_LIBRARIES
from stderr_check import assert_expected_warnings

HERE = Path(__file__).resolve().parent
LIB = paths.RUNTIME_LIB
BASES = ["glibc", "jemalloc", "mimalloc"]


def build(out_dir, name, cxx=False, flags=()):
    """Compile runtime/tests/<name>.c (or .cc) into out_dir/name."""
    src = HERE / (name + (".cc" if cxx else ".c"))
    exe = Path(out_dir) / name
    cmd = ["g++" if cxx else "gcc", "-O1", "-g", "-Wall", "-Wno-use-after-free", f"-I{HERE}",
           *flags, str(src), "-o", str(exe), "-ldl", "-lpthread"]
    subprocess.run(cmd, check=True)
    return exe


def corral_env(base="glibc", lib=LIB, **options):
    """Environment with libcorral.so (`lib`: the normal build, or
    paths.RUNTIME_DEBUG_LIB) then the base allocator preloaded, and
    CORRAL_<NAME> set from keyword options; other CORRAL_* are removed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    base_lib = BASE_LIBRARIES[base]
    env["LD_PRELOAD"] = " ".join(str(p) for p in (lib, base_lib) if p)
    for name, value in options.items():
        env[name if name.isupper() else "CORRAL_" + name.upper()] = str(value)
    return env


def run(exe, *args, env=None, timeout=120, warnings=()):
    """Run a test program; its summary line must say 0 failed, and stderr may
    hold no `corral: warning` but those matching `warnings` (regexes)."""
    result = subprocess.run([str(exe), *map(str, args)], env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{exe.name} {args}: rc {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert re.search(r"\b0 failed$", result.stdout, re.M), result.stdout
    assert_expected_warnings(result.stderr, warnings)
    return result


def stats(path):
    with open(path) as f:
        return json.load(f)


def malloc_call(exe, function):
    """(the address of `function` in exe, that of the displacement of its
    first call to malloc), by objdump."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True, text=True,
                          check=True).stdout
    head, body = text.split(f" <{function}>:\n", 1)
    call = next(line for line in body.split("\n\n", 1)[0].splitlines() if "call" in line and "malloc" in line)
    return int(head.rsplit("\n", 1)[1], 16), int(call.split(":")[0], 16) + 1


def spans_two_words(address):
    """Whether the 4 bytes at address cross an aligned 8-byte word."""
    return address // 8 != (address + 3) // 8
