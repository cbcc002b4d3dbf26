"""A small, allocation-heavy Python workload with deterministic output.

Run by tests/test_real_programs.py under Debian's /usr/bin/python3 with
PYTHONMALLOC=malloc (every object goes through malloc, so through corral) and
PYTHONHASHSEED=0. Dicts, lists, strings, tuples, classes, json, sorting and
a few thousand objects that live and die at different times, and two
extension modules loaded with dlopen (_json, _sqlite3 with libsqlite3).
"""

import json
import random
import sqlite3
from collections import Counter, defaultdict


class Node:
    __slots__ = ("key", "left", "right", "tags")

    def __init__(self, key):
        self.key = key
        self.left = None
        self.right = None
        self.tags = [f"t{key % 7}", f"k{key}"]


def insert(root, key):
    """Unbalanced binary search tree: a pointer-chasing structure."""
    if root is None:
        return Node(key)
    node = root
    while True:
        side = "left" if key < node.key else "right"
        child = getattr(node, side)
        if child is None:
            setattr(node, side, Node(key))
            return root
        node = child


def in_order(root):
    out, stack, node = [], [], root
    while stack or node is not None:
        while node is not None:
            stack.append(node)
            node = node.left
        node = stack.pop()
        out.append(node.key)
        node = node.right
    return out


class Account:
    def __init__(self, ident, owner):
        self.ident = ident
        self.owner = owner
        self.history = []

    def post(self, amount, memo):
        self.history.append({"amount": amount, "memo": memo})

    def balance(self):
        return sum(h["amount"] for h in self.history)


def main():
    rng = random.Random(20201122)

    root = None
    keys = [rng.randrange(100000) for _ in range(4000)]
    for k in keys:
        root = insert(root, k)
    ordered = in_order(root)
    print("tree", len(ordered), ordered[:5], ordered[-5:], ordered == sorted(keys))

    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randrange(2, 9))) for _ in range(6000)]
    counts = Counter(words)
    print("words", len(counts), counts.most_common(5))

    by_length = defaultdict(list)
    for w in words:
        by_length[len(w)].append(w)
    print("lengths", sorted((k, len(v)) for k, v in by_length.items()))

    accounts = {i: Account(i, f"owner-{i % 37}") for i in range(800)}
    for step in range(12000):
        acct = accounts[rng.randrange(800)]
        acct.post(rng.randrange(-500, 1000), f"step {step}")
        if step % 1000 == 999:      # drop old history: frees interleaved with allocations
            for a in accounts.values():
                del a.history[: len(a.history) // 2]
    richest = sorted(accounts.values(), key=lambda a: (-a.balance(), a.ident))[:5]
    print("richest", [(a.ident, a.owner, a.balance()) for a in richest])

    doc = {
        "accounts": [{"id": a.ident, "owner": a.owner, "n": len(a.history), "memos": [h["memo"] for h in a.history[:3]]}
                     for a in accounts.values()],
        "words": sorted(counts.items())[:500],
    }
    text = json.dumps(doc, sort_keys=True)
    back = json.loads(text)
    print("json", len(text), back == json.loads(json.dumps(back, sort_keys=True)), back["accounts"][7])

    table = [tuple(rng.randrange(50) for _ in range(4)) for _ in range(5000)]
    table.sort(key=lambda row: (row[2], -row[0], row))
    print("sorted", table[:3], table[-3:])

    strings = []
    for i in range(3000):
        s = f"{i:05d}-" + "x" * (i % 61) + words[i]
        strings.append(s.upper() if i % 3 else s[::-1])
        if len(strings) > 700:
            strings = strings[350:]
    print("strings", len(strings), sum(map(len, strings)), hash("".join(strings[:50])) % 1000003)

    # _sqlite3 and libsqlite3 are loaded with dlopen while the program runs.
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE word(w TEXT, n INTEGER)")
    db.executemany("INSERT INTO word VALUES(?, ?)", sorted(counts.items()))
    db.execute("CREATE INDEX word_n ON word(n)")
    print("sqlite", db.execute("SELECT n, count(*), min(w), max(w) FROM word GROUP BY n ORDER BY n DESC LIMIT 4").fetchall())
    db.close()


if __name__ == "__main__":
    main()
