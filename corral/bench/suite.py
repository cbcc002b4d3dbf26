"""The public benchmark suite: programs nobody here wrote, built from a
checkout of llvm-test-suite the user points at (`corral bench --suite olden
--source DIR`) or, for the debian suite, installed from Debian packages
(`apt-get install xalan povray`), each with a training, a cache and a
measuring input.

Only the definitions are ours: which folder, which preprocessor flags and C
standard the program's own CMakeLists.txt asks for, and the inputs. The
measuring input is the CMakeLists' large (or only) problem size; the cache
input, which cachegrind simulates, its default or small size; the training
input, which the profiler sees, smaller still, but with a heap past the
stated 1 MiB last level where the program's data can get there in a few
seconds of profiling: validation judges a group on it, and a layout gain
does not show on a heap that fits the cache (bisort's 20000 nodes, 0.6
MiB, measured -0.1% cycles for the group that runs 1.11x on the measuring
input). Their output is checked by a hash of everything they print
(Workload.checksum "stdout"). Nothing of their sources is kept in this
repository.

The debian suite is HALO's two programs from Debian's own builds, used as
they come: stripped PIE binaries without frame pointers, nothing compiled.
Their inputs are ours, generated (corral/bench/suite_inputs.py): no
third-party input is kept here either.

`{src}` in an input stands for the program's folder in the checkout,
`{inputs}/NAME` for a generated input; an input ending in `< FILE` reads
FILE (as RUN_OPTIONS does).
"""

from dataclasses import dataclass

from corral.errors import CorralError

GET_SOURCES = ("get a checkout with `git clone --depth 1 https://github.com/llvm/llvm-test-suite` "
               "and pass its folder with --source (or set LLVM_TEST_SUITE)")


def get_packages(packages) -> str:
    """How to get the debian suite's missing packages (as root)."""
    return f"install {'it' if len(packages) == 1 else 'them'} with `apt-get install {' '.join(packages)}`"


# How the programs are compiled. -O3 is llvm-test-suite's usual setting and
# leaves frame pointers out (gcc's default on x86-64), so identification has
# to walk by unwind tables; "O2-fp" keeps them, the other way the runtime walks.
VARIANTS = {"O3": ("-O3",), "O2-fp": ("-O2", "-fno-omit-frame-pointer")}
DEFAULT_VARIANT = "O3"
TRAINING_INPUTS = ("suite", "small", "tiny")


@dataclass(frozen=True)
class Program:
    name: str
    suite: str                    # olden, ptrdist, mallocbench, debian
    description: str
    folder: str                   # in the llvm-test-suite checkout ("" for an installed program)
    cppflags: tuple[str, ...]     # as its CMakeLists.txt
    train: tuple[str, ...]
    cache: tuple[str, ...]
    measure: tuple[str, ...]
    std: str | None = None        # C_STANDARD of its CMakeLists.txt
    libs: tuple[str, ...] = ("-lm",)
    package: str | None = None    # the Debian package that installs `binary`: nothing is built
    binary: str | None = None
    sources: tuple[str, ...] = () # the files its CMakeLists.txt names, when not every *.c
    # Smaller training inputs than `train`, for checking that a plan does not
    # hang on the one a user happened to pick (`corral bench --train`):
    # "small" about half the suite's run, "tiny" about 10 ms on glibc. The
    # suite's own runs 20-50 ms where the program allows: em3d, mst, ft and
    # perimeter trained on 1-4 ms runs before (2026-11-27), too short for
    # validation to time even the bases, and ft's plans had no group.
    # perimeter's sizes go by quadtree levels: 8 is 9 ms, 9 is 36 ms, so it
    # has no third input.
    smaller: tuple[tuple[str, ...], ...] = ()

    def training(self, which: str) -> tuple[str, ...]:
        """The training input named `which` ("suite", "small", "tiny"); a
        program without that one takes the next larger it has."""
        order = [self.train, *self.smaller]
        return order[min(TRAINING_INPUTS.index(which), len(order) - 1)]

    @property
    def installed(self) -> bool:
        return self.package is not None


def _p(name, suite, description, folder, cppflags, train, cache, measure, std=None,
       sources=(), smaller=()) -> Program:
    return Program(name, suite, description, folder, tuple(cppflags),
                   *(tuple(map(str, a)) for a in (train, cache, measure)), std=std,
                   sources=tuple(sources), smaller=tuple(tuple(map(str, a)) for a in smaller))


def _deb(name, description, package, binary, train, cache, measure) -> Program:
    return Program(name, "debian", description, "", (), tuple(train), tuple(cache), tuple(measure),
                   libs=(), package=package, binary=binary)


# povray quiet and repeatable: no display window (-D, Debian's povray.ini
# asks for one), no progress lines (-V), one render thread (+WT1, like the
# suite's other programs; the image is the same with two), no
# antialiasing (-A), quality pinned (+Q9) and a BMP image on stdout (+FB
# +O-). BMP, because PNG and PPM carry the render date, so every run's hash
# would differ; povray's banner and statistics go to stderr, not hashed.
POVRAY = ("-D", "-V", "+WT1", "-A", "+Q9", "+FB", "+O-")
# xmllint's query: every item's quantity, and the orders with a large one
XPATH = "sum(//item/@qty) + count(//order[items/item/@qty > 8])"

OLDEN = "MultiSource/Benchmarks/Olden"
PTRDIST = "MultiSource/Benchmarks/Ptrdist"
MALLOCBENCH = "MultiSource/Benchmarks/MallocBench"
# cfrac's CMakeLists.txt leaves pfactor.c (a second program) out.
CFRAC = ("cfrac pops pconst pio pabs pneg pcmp podd phalf padd psub pmul pdivmod psqrt ppowmod "
         "atop ptoa itop utop ptou errorp pfloat pidiv pimod picmp primes pcfrac pgcd").split()

PROGRAMS: dict[str, Program] = {p.name: p for p in [
    _p("health", "olden", "Colombian health care simulation: a 4-ary tree of villages, "
       "patients moved between linked lists every step", f"{OLDEN}/health", ["-DTORONTO"],
       [8, 15, 1], [9, 20, 1], [10, 40, 1], smaller=([7, 30, 1], [7, 20, 1])),
    _p("treeadd", "olden", "builds a binary tree, then sums it recursively",
       f"{OLDEN}/treeadd", ["-DTORONTO"], [16], [20], [22], smaller=([15], [14])),
    _p("perimeter", "olden", "quad tree of an image, perimeter of its black region",
       f"{OLDEN}/perimeter", ["-DTORONTO"], [9], [9], [11], smaller=([8],)),
    _p("bisort", "olden", "bitonic sort of a binary tree of random values",
       f"{OLDEN}/bisort", ["-DTORONTO"], [100000], [700000], [3000000], std="gnu17",
       smaller=([50000], [30000])),
    _p("em3d", "olden", "electromagnetic wave propagation on a bipartite graph of nodes "
       "with pointer arrays", f"{OLDEN}/em3d", ["-DTORONTO"], [256, 200, 35], [256, 250, 35],
       [1024, 1000, 125], smaller=([224, 175, 35], [192, 150, 35])),
    _p("mst", "olden", "minimum spanning tree over per-vertex hash tables",
       f"{OLDEN}/mst", ["-DTORONTO"], [800], [1000], [4000], smaller=([600], [500])),
    _p("power", "olden", "power-system pricing over a tree of feeders, laterals and branches "
       "(one fixed size)", f"{OLDEN}/power", ["-DTORONTO"], [], [], []),
    # bh's cache input lies between its small and default sizes (the
    # default takes about 20 s a configuration under cachegrind); yacr2's
    # is another input of its folder, its CMakeLists having one.
    _p("bh", "olden", "Barnes-Hut n-body simulation over an octree of cells and bodies",
       f"{OLDEN}/bh", ["-fcommon", "-DTORONTO"], [4000, 5], [8000, 10], [40000, 30], std="gnu17",
       smaller=([2000, 4], [1000, 2])),
    _p("tsp", "olden", "travelling salesman tour over a binary tree of random cities, "
       "joined into a cyclic list", f"{OLDEN}/tsp", ["-DTORONTO"], [32768], [102400], [2048000],
       smaller=([16384], [8192])),
    _p("voronoi", "olden", "Voronoi diagram of random points by divide and conquer over "
       "quad-edge records", f"{OLDEN}/voronoi", ["-DTORONTO"], [10000, 20, 32, 7],
       [100000, 20, 32, 7], [1000000, 20, 32, 7], std="gnu17",
       smaller=([5000, 20, 32, 7], [2000, 20, 32, 7])),
    _p("ft", "ptrdist", "minimum spanning tree with a Fibonacci heap",
       f"{PTRDIST}/ft", [], [1000, 20000], [1500, 100000], [6000, 100000],
       smaller=([700, 15000], [400, 6000])),
    _p("ks", "ptrdist", "Kernighan-Schweikert graph partitioning, linked lists of nets "
       "and modules", f"{PTRDIST}/ks", [], ["{src}/KL-2.in"], ["{src}/KL-4.in"],
       ["{src}/KL-5.in"], smaller=(["{src}/KL-3.in"], ["{src}/KL-1.in"])),
    _p("bc", "ptrdist", "the bc calculator: a prime search in its own language, "
       "with numbers as allocated digit strings", f"{PTRDIST}/bc", [],
       ["<", "{src}/primes.b"], ["<", "{src}/primes.b"], ["<", "{src}/primes.b"]),
    _p("yacr2", "ptrdist", "channel router: constraint graphs and a maze router over nets",
       f"{PTRDIST}/yacr2", ["-DTODD"], ["{src}/input1.in"], ["{src}/input3.in"],
       ["{src}/input2.in"]),
    _p("anagram", "ptrdist", "anagrams of phrases from a dictionary of bit-vector words",
       f"{PTRDIST}/anagram", [], ["{src}/words", 2, "<", "{src}/input.in"],
       ["{src}/words", 2, "<", "{src}/input.OUT"], ["{src}/words", 2, "<", "{src}/input.OUT"]),
    _p("espresso", "mallocbench", "two-level logic minimisation over cube sets (MallocBench)",
       f"{MALLOCBENCH}/espresso", ["-DNOMEMOPT"],
       ["-t", "{src}/INPUT/mlp4.espresso"], ["-t", "{src}/INPUT/cps.espresso"],
       ["-t", "{src}/INPUT/largest.espresso"], std="gnu90",
       smaller=(["-t", "{src}/INPUT/Z5xp1.espresso"],)),
    # Factoring by continued fractions: bignums made and freed by the
    # million. The training number is ours (two 14-digit primes); the cache
    # and measuring ones are the CMakeLists' default and large.
    _p("cfrac", "mallocbench", "factoring by continued fractions, with short-lived "
       "allocated bignums (MallocBench)", f"{MALLOCBENCH}/cfrac", ["-DNOMEMOPT"],
       ["300000000001220000000000407"], ["41757646344123832613190542166099121"],
       ["376529507064485971626234556089714053987"], std="gnu17", sources=CFRAC,
       smaller=(["1000000016000000063"],)),
    # Sizes, measured on 2 cores: training heaps past 1 MiB (xalan 3.7 MiB,
    # povray 6.2 MiB) in 4-10 s of profiling; measuring runs of 2.2 s
    # (xalan) and 2.1 s of CPU (povray; its threads' hand-over sleeps add
    # 0.6 s of wall time). povray's resolution doubles with each input, so
    # the pixels per object stay about the same.
    _deb("xalan", "Xalan-C++ XSLT processor: our report stylesheet (keys, "
         "grouping, sorts, recursive templates) over a generated XML document of orders",
         "xalan", "/usr/bin/Xalan", ["{inputs}/orders-1000.xml", "{inputs}/report.xsl"],
         ["{inputs}/orders-4000.xml", "{inputs}/report.xsl"],
         ["{inputs}/orders-40000.xml", "{inputs}/report.xsl"]),
    _deb("povray", "POV-Ray 3.7 ray tracer: a generated city of CSG objects "
         "with their own textures on a terrain mesh, rendered to a BMP on stdout",
         "povray", "/usr/bin/povray", [*POVRAY, "+W160", "+H120", "{inputs}/scene-1000.pov"],
         [*POVRAY, "+W320", "+H240", "{inputs}/scene-4000.pov"],
         [*POVRAY, "+W640", "+H480", "{inputs}/scene-20000.pov"]),
    # The programs a user runs every day (issue 50's table: dynamic mode must
    # cost them nothing). Each input is ours; the measuring runs take 0.65-2.5
    # s of CPU on 2 cores (docs/bench.md).
    _deb("lua", "Lua 5.4 interpreter: binary trees made and checked, records in a table "
         "sorted by a Lua comparison, strings joined", "lua5.4", "/usr/bin/lua5.4",
         ["{inputs}/trees.lua", "11"], ["{inputs}/trees.lua", "13"], ["{inputs}/trees.lua", "16"]),
    _deb("python3", "CPython 3.11: a binary search tree of slotted objects, words counted in "
         "a dict of lists and sorted, rows grouped and formatted", "python3.11-minimal",
         "/usr/bin/python3.11", ["-S", "-E", "{inputs}/objects.py", "5000"],
         ["-S", "-E", "{inputs}/objects.py", "20000"], ["-S", "-E", "{inputs}/objects.py", "150000"]),
    _deb("perl", "Perl 5 interpreter: binary trees of array references, records in a hash "
         "sorted on two keys, strings joined", "perl-base", "/usr/bin/perl",
         ["{inputs}/trees.pl", "10"], ["{inputs}/trees.pl", "12"], ["{inputs}/trees.pl", "15"]),
    _deb("gawk", "GNU awk: word, word-pair and prefix counts in associative arrays, "
         "sorted by count", "gawk", "/usr/bin/gawk", ["-f", "{inputs}/words.awk", "{inputs}/words-1000.txt"],
         ["-f", "{inputs}/words.awk", "{inputs}/words-5000.txt"],
         ["-f", "{inputs}/words.awk", "{inputs}/words-40000.txt"]),
    _deb("sqlite3", "SQLite shell on an in-memory database: a shop's orders inserted, indexed, "
         "joined, grouped, ranked, updated and deleted", "sqlite3", "/usr/bin/sqlite3",
         ["-batch", "-bail", ":memory:", "<", "{inputs}/orders-1500.sql"],
         ["-batch", "-bail", ":memory:", "<", "{inputs}/orders-5000.sql"],
         ["-batch", "-bail", ":memory:", "<", "{inputs}/orders-40000.sql"]),
    _deb("git", "git log -p --stat over a generated project's history: every blob read, "
         "diffed and searched for renames", "git", "/usr/bin/git",
         ["--git-dir", "{inputs}/repo-150.git", "log", "-p", "--stat", "main"],
         ["--git-dir", "{inputs}/repo-400.git", "log", "-p", "--stat", "main"],
         ["--git-dir", "{inputs}/repo-3000.git", "log", "-p", "--stat", "main"]),
    _deb("dot", "graphviz's dot laying out a dependency graph (ranks, crossings, "
         "coordinates, splines), plain output", "graphviz", "/usr/bin/dot",
         ["-Tplain", "{inputs}/graph-250.dot"], ["-Tplain", "{inputs}/graph-500.dot"],
         ["-Tplain", "{inputs}/graph-900.dot"]),
    # sfdp, graphviz's force-directed layout of large graphs: a quadtree of
    # the nodes rebuilt at each step, its nodes, lists and coordinates made
    # through graphviz's own wrappers (gmalloc, zmalloc) by the million.
    _deb("sfdp", "graphviz's sfdp laying out the same dependency graph by forces "
         "(a quadtree of the nodes rebuilt at every step), plain output", "graphviz", "/usr/bin/sfdp",
         ["-Tplain", "{inputs}/graph-1000.dot"], ["-Tplain", "{inputs}/graph-2000.dot"],
         ["-Tplain", "{inputs}/graph-5000.dot"]),
    _deb("xmllint", "libxml2's xmllint: xalan's document of orders parsed into a tree and "
         "summed by an XPath query", "libxml2-utils", "/usr/bin/xmllint",
         ["--xpath", XPATH, "{inputs}/orders-1000.xml"], ["--xpath", XPATH, "{inputs}/orders-4000.xml"],
         ["--xpath", XPATH, "{inputs}/orders-40000.xml"]),
    # A C++ program: cppcheck keeps every token, scope and derived value as
    # an object of its own, made with operator new by the million.
    _deb("cppcheck", "cppcheck, a static analyser written in C++: a generated C file of "
         "functions checked in each of its configurations, findings on stdout", "cppcheck",
         "/usr/bin/cppcheck", ["-q", "--output-file=/dev/stdout", "{inputs}/unit-30.c"],
         ["-q", "--output-file=/dev/stdout", "{inputs}/unit-60.c"],
         ["-q", "--output-file=/dev/stdout", "{inputs}/unit-200.c"]),
]}

SUITES = sorted({p.suite for p in PROGRAMS.values()}) + ["public"]


def select(suites: str, names: str | None = None) -> list[Program]:
    """Programs of the comma-separated suites ("public": all), optionally
    only those named."""
    wanted = [s.strip() for s in suites.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SUITES]
    if unknown:
        raise CorralError(f"unknown suite {unknown[0]!r}; known: {', '.join(SUITES)}")
    chosen = [p for p in PROGRAMS.values() if "public" in wanted or p.suite in wanted]
    if names:
        listed = [n.strip() for n in names.split(",") if n.strip()]
        missing = [n for n in listed if n not in {p.name for p in chosen}]
        if missing:
            raise CorralError(f"{missing[0]!r} is not in suite {suites}; it has: "
                              f"{', '.join(p.name for p in chosen)}")
        chosen = [p for p in chosen if p.name in listed]
    return chosen


def expand(args: tuple[str, ...], folder: str) -> tuple[str, ...]:
    """`{src}` -> the program's folder in the checkout."""
    return tuple(a.replace("{src}", folder) for a in args)
