"""Add profiles of one program into one: runs on several inputs or machines.

Counts and affinity weights are summed and contexts unified, as if one run
had done the work of all. Profiles of another build (a module's build-id
differs) or recorded with other affinity settings are refused. `corral plan`
also accepts several profiles and merges them itself. Example:

    corral merge small.profile.json.gz other.profile.json.gz -o all.profile.json.gz
"""


def add_arguments(p):
    p.add_argument("profiles", nargs="+", metavar="PROFILE", help="profiles written by `corral profile`")
    p.add_argument("-o", "--output", required=True, help="profile to write (plain JSON if it ends in .json)")


def run(args) -> int:
    from corral.errors import CorralError
    from corral.profile.merge import merge
    from corral.profile.reader import load_document
    from corral.profile.writer import write

    doc = merge([load_document(p) for p in args.profiles], args.profiles)
    try:
        write(doc, args.output)
    except OSError as e:
        raise CorralError(f"cannot write {args.output}: {e.strerror or e}") from None
    print(f"corral: merged {len(args.profiles)} profiles: {len(doc['contexts'])} contexts, "
          f"{doc['totals'].get('allocs', 0)} allocations; wrote {args.output}")
    print(f"next: corral plan {args.output}")
    return 0
