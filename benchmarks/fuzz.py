"""Long mutation-fuzzing campaigns for the front end and the drop-in ptxas.

The cases and checks are `tests.fuzz.engine`'s (CI runs a few hundred of
them); this script runs as many as you ask for, on all cores, and prints a
table by mutation kind: cases, tracebacks, hangs, bad errors (not one
``file:line:col`` line), wrong outputs (fmt output that does not re-parse to
itself; the drop-in differing from NVIDIA's ptxas in exit status, output
bytes, stdout or stderr beyond one warning line), and how many cases also ran
``trace`` and the drop-in, and how often ptxas refused our reprint of PTX it
accepts (the fail-open rule hid those; they are printer bugs).

    python benchmarks/fuzz.py --cases 100000 --seed 1 [--json] [--workers 8]
    python benchmarks/fuzz.py --write-seeds DIR        # copy the seeds (to fuzz elsewhere)
    python benchmarks/fuzz.py --seeds DIR --cases 1000 # fuzz copied seeds

Seeds: the compiled test corpus (``$PTXASW_CORPUS_CACHE``, built with nvcc if
needed), Triton's PTX in ``tests/corpus/triton`` and ``examples/*.ptx``, files
under ``--max-seed-bytes``. Any finding is replayed by ``--only CASE`` with the
same ``--seed`` and seeds;
``--save DIR`` keeps the mutants that failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fuzz.engine import Case, Options, Seed, Tally, run_case  # noqa: E402


def corpus_seeds(max_bytes: int) -> list[Seed]:
    """The compiled corpus (cached under $PTXASW_CORPUS_CACHE), Triton's PTX
    (`tests/corpus/triton`) and the examples."""
    seeds = [Seed.of(p) for p in sorted((REPO / "examples").glob("*.ptx"))]
    seeds += [Seed.of(p) for p in sorted((REPO / "tests" / "corpus" / "triton").glob("*.ptx"))]
    from tests.corpus.build import build_corpus, have_nvcc

    if have_nvcc():
        cache = Path(os.environ.get("PTXASW_CORPUS_CACHE") or Path(tempfile.gettempdir()) / "ptxasw-corpus")
        cache.mkdir(parents=True, exist_ok=True)
        seeds += [Seed.of(f.ptx_path, f.ptxas_flags) for f in build_corpus(cache)]
    else:
        print("fuzz: nvcc not found: fuzzing examples/ only", file=sys.stderr)
    return [s for s in seeds if s.path.stat().st_size <= max_bytes]


def write_seeds(seeds: list[Seed], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for s in seeds:
        shutil.copyfile(s.path, out / s.path.name)
        manifest.append({"file": s.path.name, "arch": s.arch, "ptxas_flags": list(s.ptxas_flags)})
    (out / "seeds.json").write_text(json.dumps(manifest, indent=1))


def read_seeds(d: Path) -> list[Seed]:
    return [
        Seed(d / m["file"], m["arch"], tuple(m["ptxas_flags"]))
        for m in json.loads((d / "seeds.json").read_text())
    ]


# --------------------------------------------------------------------------
# Workers


_STATE: dict[str, object] = {}


def _init(seeds: list[Seed], opts: Options, campaign: int) -> None:
    _STATE.update(
        seeds=seeds, opts=opts, campaign=campaign, work=Path(tempfile.mkdtemp(prefix="ptxasw-fuzz-"))
    )


def _run_chunk(indexes: list[int]) -> list:
    seeds, opts, work = _STATE["seeds"], _STATE["opts"], _STATE["work"]
    return [run_case(Case(_STATE["campaign"], i), seeds, work, opts) for i in indexes]  # type: ignore[arg-type]


def campaign(
    seeds: list[Seed], opts: Options, cases: int, seed: int, workers: int, first: int = 0
) -> tuple[Tally, float]:
    tally = Tally()
    start = time.monotonic()
    chunk = 25
    chunks = [list(range(i, min(i + chunk, first + cases))) for i in range(first, first + cases, chunk)]
    done = 0
    with multiprocessing.Pool(workers, _init, (seeds, opts, seed)) as pool:
        for results in pool.imap_unordered(_run_chunk, chunks):
            for r in results:
                tally.add(r)
            done += len(results)
            if sys.stderr.isatty() or done % 2000 < chunk:
                rate = done / (time.monotonic() - start)
                print(
                    f"\rfuzz: {done:,}/{cases:,} cases ({rate:,.0f}/s)", end="", file=sys.stderr, flush=True
                )
    print(file=sys.stderr)
    return tally, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=1000, help="how many cases (default 1000)")
    ap.add_argument("--seed", type=int, default=1, help="the campaign's seed (default 1)")
    ap.add_argument("--first", type=int, default=0, help="number of the first case (to split a campaign)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--trace-every", type=int, default=8, help="run trace on every Nth case (0: never)")
    ap.add_argument("--dropin-every", type=int, default=4, help="compare the drop-in on every Nth case")
    ap.add_argument("--time-limit", type=float, default=20.0, help="seconds before a command counts as hung")
    ap.add_argument("--max-seed-bytes", type=int, default=40_000, help="skip larger seed files")
    ap.add_argument("--seeds", type=Path, help="fuzz the seeds written by --write-seeds to this directory")
    ap.add_argument("--write-seeds", type=Path, help="copy the seeds and a manifest here, then stop")
    ap.add_argument("--only", type=int, help="replay this one case and print its findings")
    ap.add_argument("--save", type=Path, help="keep the mutants of failed cases here")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)

    seeds = read_seeds(args.seeds) if args.seeds else corpus_seeds(args.max_seed_bytes)
    if args.write_seeds:
        write_seeds(seeds, args.write_seeds)
        print(f"wrote {len(seeds)} seeds to {args.write_seeds}")
        return 0
    if not seeds:
        print("fuzz: error: no seed files", file=sys.stderr)
        return 2
    ptxas = shutil.which("ptxas") or next(
        (p for p in ("/usr/local/cuda/bin/ptxas",) if os.access(p, os.X_OK)), None
    )
    if ptxas is None:
        print("fuzz: NVIDIA ptxas not found: no drop-in comparisons", file=sys.stderr)
    opts = Options(args.trace_every, args.dropin_every, args.time_limit, ptxas)
    if args.only is not None:
        result = run_case(
            Case(args.seed, args.only), seeds, Path(tempfile.mkdtemp(prefix="ptxasw-fuzz-")), opts
        )
        print(json.dumps([dataclasses.asdict(f) for f in result.findings], indent=1))
        return 1 if result.findings else 0

    tally, seconds = campaign(seeds, opts, args.cases, args.seed, max(1, args.workers), args.first)
    if args.save and tally.findings:
        args.save.mkdir(parents=True, exist_ok=True)
        for f in tally.findings:
            _, _, data = Case(args.seed, f.case).make(seeds)
            (args.save / f"case{f.case}-{f.seed_file}").write_bytes(data)
    doc = {
        "seed": args.seed,
        "first": args.first,
        "cases": args.cases,
        "seeds": len(seeds),
        "workers": args.workers,
        "seconds": round(seconds, 1),
        "ptxas": ptxas,
        **tally.to_json(),
    }
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(f"{args.cases:,} cases from {len(seeds)} seeds, seed {args.seed}, {seconds:,.0f} s")
        print(tally.table())
        for f in tally.findings[:30]:
            print(f"case {f.case} ({f.kind}, {f.seed_file}) {f.command}: {f.problem}: {f.detail}")
        if len(tally.findings) > 30:
            print(f"... and {len(tally.findings) - 30} more findings")
    return 1 if tally.findings else 0


if __name__ == "__main__":
    sys.exit(main())
