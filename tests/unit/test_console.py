"""Into a file or a pipe, commands' sentences come out as written: not
wrapped at 80 columns, no padding (corral/console.py)."""

import subprocess
import sys

SENTENCE = "corral: " + " ".join(["a sentence longer than any terminal"] * 8)


def test_sentences_are_not_wrapped_when_output_is_not_a_terminal():
    code = ("from corral.console import console\n"
            f"console(stderr=False).print({SENTENCE!r}, highlight=False)\n"
            f"console().print({SENTENCE!r}, highlight=False)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == SENTENCE + "\n"
    assert out.stderr == SENTENCE + "\n"


def test_tables_share_one_style_numeric_columns_right_justified():
    from corral.console import table
    t = table("hottest", ("context>", "frames"), caption="note")
    assert [c.header for c in t.columns] == ["context", "frames"]
    assert [c.justify for c in t.columns] == ["right", "left"]
    assert (t.title, t.title_justify, t.caption) == ("hottest", "left", "note")
