"""The interpreters' programs in the debian suite (corral/bench/suite.py):
one script each for lua5.4, python3, perl and gawk, written as inputs
(corral/bench/suite_inputs.py) and run on a size given on the command line.

Each does what a script in that language spends its heap on: many small
records linked into trees (made and dropped, and one kept for the whole
run), tables or dictionaries keyed by built strings, a sort with a
comparison of the language's own, and string building. The output is a
few lines of counts, the same on every machine.
"""

LUA = """\
-- corral's lua workload (corral/bench/suite_scripts.py): lua5.4 trees.lua DEPTH
local depth = tonumber(arg[1]) or 10

local function make(d)
  if d == 0 then return {} end
  return {make(d - 1), make(d - 1)}
end

local function check(t)
  if t[1] then return 1 + check(t[1]) + check(t[2]) end
  return 1
end

local kept = make(depth)
for d = 4, depth, 2 do
  local rounds = 1 << (depth - d + 4)
  local sum = 0
  for _ = 1, rounds do sum = sum + check(make(d)) end
  print(string.format("%d trees of depth %d: %d nodes", rounds, d, sum))
end

local records, index = {}, {}
for i = 1, 1 << (depth - 1) do
  local r = {id = i, name = "item" .. (i * 7919 % 100003), tags = {i % 3, i % 5, i % 7}}
  records[#records + 1] = r
  index[r.name] = r
end
table.sort(records, function(a, b) return a.name < b.name end)
local words = {}
for i = 1, #records, 3 do words[#words + 1] = records[i].name .. ":" .. records[i].tags[2] end
local text = table.concat(words, ",")
print(records[1].name, records[#records].name, #text, check(kept))
"""

PYTHON = """\
# corral's python workload (corral/bench/suite_scripts.py): python3 objects.py SIZE
import sys

size = int(sys.argv[1]) if len(sys.argv) > 1 else 1000


class Node:
    __slots__ = ("key", "left", "right", "payload")

    def __init__(self, key, payload):
        self.key, self.left, self.right, self.payload = key, None, None, payload


def insert(root, node):
    while True:
        side = "left" if node.key < root.key else "right"
        child = getattr(root, side)
        if child is None:
            setattr(root, side, node)
            return
        root = child


def walk(root):
    total, stack = 0, [root]
    while stack:
        n = stack.pop()
        total += len(n.payload)
        stack.extend(c for c in (n.left, n.right) if c is not None)
    return total


keys = [(i * 2654435761) % (size * 16) for i in range(size)]
root = Node(keys[0], {"name": "k0"})
for i, k in enumerate(keys[1:], 1):
    insert(root, Node(k, {"name": f"k{i}", "tags": [i % 3, i % 7]}))
print("tree", walk(root))

by_word = {}
for i in range(size * 4):
    word = "w" + str(i * 7919 % (size + 17))
    by_word.setdefault(word, []).append(i)
ranked = sorted(by_word.items(), key=lambda kv: (-len(kv[1]), kv[0]))
print("words", len(by_word), ranked[0][0], len(ranked[0][1]))

rows = [{"id": i, "city": "c" + str(i % 97), "amount": (i * 31) % 1000} for i in range(size * 2)]
totals = {}
for r in rows:
    totals[r["city"]] = totals.get(r["city"], 0) + r["amount"]
text = ";".join(f"{c}={t}" for c, t in sorted(totals.items()))
print("cities", len(totals), len(text), sum(totals.values()))
"""

PERL = """\
# corral's perl workload (corral/bench/suite_scripts.py): perl trees.pl DEPTH
use strict;
use warnings;

my $depth = shift // 10;

sub make {
    my ($d) = @_;
    return [] if $d == 0;
    return [make($d - 1), make($d - 1)];
}

sub check {
    my ($t) = @_;
    return @$t ? 1 + check($t->[0]) + check($t->[1]) : 1;
}

my $kept = make($depth);
for (my $d = 4; $d <= $depth; $d += 2) {
    my $rounds = 1 << ($depth - $d + 4);
    my $sum = 0;
    $sum += check(make($d)) for 1 .. $rounds;
    print "$rounds trees of depth $d: $sum nodes\\n";
}

my %index;
for my $i (1 .. 1 << ($depth - 1)) {
    my $name = "item" . ($i * 7919 % 100003);
    $index{$name} = {id => $i, tags => [$i % 3, $i % 5, $i % 7]};
}
my @names = sort { $index{$a}{tags}[1] <=> $index{$b}{tags}[1] or $a cmp $b } keys %index;
my $text = join ",", map { "$_:$index{$_}{id}" } @names[0 .. $#names / 3];
print scalar(@names), " $names[0] ", length($text), " ", check($kept), "\\n";
"""

AWK = """\
# corral's gawk workload (corral/bench/suite_scripts.py): gawk -f words.awk words-N.txt
{
    for (i = 1; i <= NF; i++) {
        count[$i]++
        if (i > 1) pairs[$(i - 1) " " $i]++
        first[substr($i, 1, 2)] = first[substr($i, 1, 2)] " " $i
    }
    lines++
}
END {
    PROCINFO["sorted_in"] = "@val_num_desc"
    shown = 0
    for (w in count) {
        if (shown++ == 15) break
        print w, count[w]
    }
    shown = 0
    for (p in pairs) {
        if (shown++ == 10) break
        print p, pairs[p]
    }
    n = 0
    for (f in first) n += length(first[f])
    print lines, length(count), length(pairs), n
}
"""

SCRIPTS = {"trees.lua": LUA, "objects.py": PYTHON, "trees.pl": PERL, "words.awk": AWK}
