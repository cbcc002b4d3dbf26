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


def _own_costs(out):
    """(object, function, instructions) of each of a function's own cost
    lines, from a file callgrind wrote with --compress-strings=no; a call's
    line after `calls=` is the callee's cost, and is skipped."""
    obj, fn_obj, fn, skip = "", "", None, False
    for line in out.read_text().splitlines():
        if skip:
            skip = False
        elif line.startswith("ob="):
            obj = line[3:].strip()
        elif line.startswith("fn="):
            fn_obj, fn = obj, line[3:].strip()
        elif line.startswith("calls="):
            skip = True
        elif line[:1] and (line[0].isdigit() or line[0] in "+-*"):
            yield fn_obj, fn, int(line.split()[-1])


def instructions_in(out, object_suffix):
    """Instructions executed in the functions of the object file whose path
    ends in `object_suffix`, from a file callgrind wrote with
    --compress-strings=no: each function's own cost lines, not what it
    calls."""
    return sum(cost for obj, _, cost in _own_costs(out) if obj.endswith(object_suffix))


def calls_into(out, object_suffix, names):
    """Calls (a tail jump counts, as callgrind records it) of each function
    in `names` inside the object file whose path ends in `object_suffix`,
    from a file callgrind wrote with --compress-strings=no. A call line's
    callee lives in the `cob=` object named before it, else in the caller's."""
    calls, obj, callee_obj, callee = dict.fromkeys(names, 0), "", None, None
    for line in out.read_text().splitlines():
        if line.startswith("ob="):
            obj = line[3:].strip()
        elif line.startswith("cob="):
            callee_obj = line[4:].strip()
        elif line.startswith("cfn="):
            callee, where, callee_obj = line[4:].strip(), callee_obj or obj, None
        elif line.startswith("calls=") and callee in calls and where.endswith(object_suffix):
            calls[callee] += int(line[6:].split()[0])
    return calls


def own_instructions(out, name):
    """Instructions executed in function `name` itself, not in what it
    calls, from a file callgrind wrote with --compress-strings=no."""
    return sum(cost for _, fn, cost in _own_costs(out) if fn == name)
