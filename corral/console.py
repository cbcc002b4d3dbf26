"""The one place commands get their rich consoles. On a terminal rich fits
text to its width; into a file or a pipe it would wrap sentences at 80
columns and pad them, so there text is written as is (soft wrap) and only
tables take a width."""


def console(stderr: bool = True):
    from rich.console import Console

    out = Console(stderr=stderr)
    if not out.is_terminal:
        out = Console(stderr=stderr, soft_wrap=True)
    return out
