"""What kind of corral file a path holds, from its first bytes: so that a
file given where another kind is expected gets a message that names what it
is and the command that reads it, instead of a parser's complaint."""

import zlib

KINDS = {       # what it is, what it is called where expected, what reads it
    "profile": ("a corral profile", "a profile", "`corral plan` makes a plan from it, `corral inspect` shows it"),
    "plan": ("a corral plan", "a plan", "`corral run --plan` uses it, `corral inspect` shows it"),
    "results": ("corral bench results", "bench results", "`corral report` makes a page of them"),
}
HEAD = 4096


def sniff(path) -> str | None:
    """'profile', 'plan', 'results', 'empty', or None (something else, or unreadable)."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD)
    except OSError:
        return None
    if not head:
        return "empty"
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, HEAD)
        except zlib.error:
            return None
    if head.startswith(b"corral-plan"):
        return "plan"
    if head.lstrip()[:1] == b"{":
        if b'"corralProfile"' in head:
            return "profile"
        if b'"corralBench"' in head:
            return "results"
    return None


def not_a(path, expected: str) -> str | None:
    """The message for `path` given where `expected` (a KINDS key) belongs,
    when it is recognisably another kind; None when it is not recognised."""
    kind = sniff(path)
    if kind == "empty":
        return f"{path} is empty"
    if kind is None or kind == expected:
        return None
    what, _, use = KINDS[kind]
    return f"{path} is {what}, not {KINDS[expected][1]}: {use}"


def read_text(path, what: str) -> str:
    """A possibly gzip-compressed text file, with one clear error per way it
    can be broken (`what` names the file in the message: "profile x.gz")."""
    import gzip

    from corral.errors import CorralError
    try:
        with open(path, "rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        if gzipped:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return f.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise CorralError(f"{what} does not exist") from None
    except IsADirectoryError:
        raise CorralError(f"{what} is a folder, not a file") from None
    except EOFError:
        raise CorralError(f"{what} is truncated: its compressed data ends early") from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise CorralError(f"{what} is a corrupt gzip file ({e})") from None
    except UnicodeDecodeError:
        raise CorralError(f"{what} is not text: it is binary, neither gzip nor JSON") from None
    except OSError as e:
        raise CorralError(f"{what} is not readable: {e.strerror or e}") from None
