"""A child's standard streams as measuring sees them: a file to read as
standard input, and what it printed, as text that keeps every byte and as
a short hash (runs that must not change a program's output compare it)."""

import contextlib
import hashlib
import subprocess


def stdin_of(path):
    """A file to hand a child as standard input: `path`, or nothing to read."""
    return open(path, "rb") if path else contextlib.nullcontext(subprocess.DEVNULL)


def output_text(data: bytes) -> str:
    """A program's stdout as text that keeps every byte. povray prints a
    binary image: decoded with errors="replace", every byte that is not
    UTF-8 would read as the same U+FFFD, and two different images could
    hash alike. Text that is UTF-8 reads and hashes as before."""
    return data.decode(errors="surrogateescape")


def output_hash(stdout: str) -> str:
    """A checksum of everything a program printed (output_text gives its
    bytes back exactly), for programs that print no checksum line."""
    return hashlib.sha256(stdout.encode(errors="surrogateescape")).hexdigest()[:16]
