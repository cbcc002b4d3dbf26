"""Call counts from a callgrind output file, for the tests that check a
path is (or is not) taken: deterministic, unlike any timing."""

import subprocess


def run_callgrind(argv, env, out, *options):
    """Runs `argv` under callgrind into `out`, every call line naming its
    callee (what calls_of reads); `options` go to valgrind."""
    return subprocess.run(["valgrind", "--tool=callgrind", "--compress-strings=no", *options,
                           f"--callgrind-out-file={out}", *map(str, argv)],
                          env=env, capture_output=True, text=True, timeout=300)


def calls_of(out, names):
    """Calls of each function in `names`, from a file callgrind wrote with
    --compress-strings=no (so every call line names its callee)."""
    calls, callee = dict.fromkeys(names, 0), None
    for line in out.read_text().splitlines():
        if line.startswith("cfn="):
            callee = line[4:].strip()
        elif line.startswith("calls=") and callee in calls:
            calls[callee] += int(line[6:].split()[0])
    return calls
