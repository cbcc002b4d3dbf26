"""Write the benchmark results as one self-contained HTML page.

The page holds a summary table (corral against the fastest base allocator,
with the spread of the alternating runs), bar charts after HALO's Figures 13
and 14, the fragmentation of grouped memory after HALO's Table 1, and per
workload its comparisons, the planner's group picture and the groups'
allocation contexts. Images and styles are embedded: the file can be mailed
or opened offline. Example:

    corral report bench-results.json -o report.html
"""



def add_arguments(p):
    p.add_argument("results", help="results JSON written by `corral bench`")
    p.add_argument("-o", "--output", default="report.html",
                   help="HTML file to write (default: report.html)")


def run(args) -> int:
    from corral.report.html import write_report
    out = write_report(args.results, args.output)
    print(f"corral: wrote {out}")
    print(f"next: open file://{out.resolve()} in a browser")
    return 0
