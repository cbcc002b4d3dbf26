"""The one place commands get their rich consoles and tables. On a terminal
rich fits text to its width; into a file or a pipe it would wrap sentences at 80
columns and pad them, so there text is written as is (soft wrap) and only
tables take a width."""


# A column whose name ends in this is numeric: right-justified.
NUMERIC = ">"


def table(title: str, columns, caption: str | None = None):
    """A table in the one style every command uses: title on the left,
    columns named in order, `name>` for a right-justified (numeric) one."""
    from rich.table import Table

    out = Table(title=title, title_justify="left", caption=caption)
    for column in columns:
        name = column.removesuffix(NUMERIC)
        out.add_column(name, justify="right" if column.endswith(NUMERIC) else "left")
    return out


def console(stderr: bool = True):
    from rich.console import Console

    out = Console(stderr=stderr)
    if not out.is_terminal:
        out = Console(stderr=stderr, soft_wrap=True)
    return out
