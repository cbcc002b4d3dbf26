"""git's input in the debian suite (corral/bench/suite.py): a repository,
`repo-N.git`, of N commits, made from a generated `git fast-import`
stream (the stream's hash is kept beside it, `repo-N.fi`: the repository
is made again only when the stream changed).

The history is a small project's: a few dozen source files, each commit
editing some of them (lines changed, added, dropped), now and then adding
a file or moving one, with fixed authors and dates, so that one N is one
repository, hashes and all, on every machine. `git log -p` over it reads
every blob, diffs each changed file and looks for renames: git's object
cache, its delta-base cache and xdiff's records are its heap.
"""

import hashlib
import random
import shutil
import subprocess
from pathlib import Path

from corral.bench import seeded
from corral.errors import CorralError

FILES = 40
LINES = 120
START = 1_700_000_000       # the first commit's date (2023-11-14)
WORDS = ("alloc", "free", "pool", "page", "chunk", "size", "class", "site", "walk", "frame",
         "group", "plan", "heap", "span", "slot", "stub", "lock", "thread", "list", "node")


def _line(rng: random.Random) -> str:
    return "    " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8))) + ";"


def history(commits: int) -> str:
    """The fast-import stream of `commits` commits on branch main."""
    rng = seeded.rng(commits)
    files = {f"src/unit{i:02d}.c": [_line(rng) for _ in range(LINES)] for i in range(FILES)}
    out = []
    for n in range(commits):
        touched = rng.sample(sorted(files), k=min(len(files), rng.randint(1, 5)))
        if rng.random() < 0.05:
            new = f"src/unit{len(files):02d}.c"
            files[new] = [_line(rng) for _ in range(LINES // 2)]
            touched.append(new)
        moved = None
        if rng.random() < 0.03:
            old = rng.choice(sorted(files))
            moved = (old, old.replace("src/", "lib/"))
            if moved[1] in files:
                moved = None
        for name in touched:
            lines = files[name]
            for _ in range(rng.randint(1, 6)):
                at = rng.randrange(len(lines))
                choice = rng.random()
                if choice < 0.5:
                    lines[at] = _line(rng)
                elif choice < 0.8:
                    lines.insert(at, _line(rng))
                elif len(lines) > 10:
                    del lines[at]
        who = rng.choice(("Ada", "Brian", "Grace", "Ken"))
        message = f"unit work {n}: {rng.choice(WORDS)} {rng.choice(WORDS)}\n"
        out += ["commit refs/heads/main", f"mark :{n + 1}",
                f"committer {who} <{who.lower()}@example.org> {START + 3600 * n} +0000",
                f"data {len(message.encode())}", message.rstrip("\n")]
        if n:
            out.append(f"from :{n}")
        if moved:
            out.append(f"R {moved[0]} {moved[1]}")
            files[moved[1]] = files.pop(moved[0])
            touched = [moved[1] if t == moved[0] else t for t in touched]
        for name in (sorted(files) if n == 0 else touched):
            body = "\n".join(files[name]) + "\n"
            out += [f"M 100644 inline {name}", f"data {len(body.encode())}", body.rstrip("\n")]
        out.append("")
    return "\n".join(out) + "\n"


def make_repo(path: Path, stream: str) -> None:
    """The bare repository at `path`, imported from `stream`, unless it was
    made from this stream already."""
    stamp, digest = path.with_suffix(".fi"), hashlib.sha256(stream.encode()).hexdigest()
    if path.is_dir() and stamp.exists() and stamp.read_text() == digest:
        return
    shutil.rmtree(path, ignore_errors=True)
    try:
        subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(path)],
                       check=True, capture_output=True)
        subprocess.run(["git", "--git-dir", str(path), "fast-import", "--quiet"], input=stream.encode(),
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise CorralError(f"could not make the git input {path.name}: {e}") from None
    stamp.write_text(digest)
