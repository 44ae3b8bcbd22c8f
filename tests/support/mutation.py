"""Mutation testing of the core, on demand (docs/testing.md): ``python -m tests.support.mutation``.

The modules under mutation are the ``only_mutate`` files of ``[tool.mutmut]`` in pyproject.toml;
``[tool.akmbench-mutation] functions`` narrows a file to some of its functions (runner.py: only
the fingerprint). This runs ``mutmut run`` on exactly those mutants, then prints the score per
module and every surviving mutant. ``--module stats/intervals`` (or ``intervals``; repeatable) runs one module; ``--report``
only prints the score of the last run (``--markdown``: as the table of docs/testing.md); ``--retry-survivors`` runs the survivors (and mutants no
test ran) again, after tests were added; ``--sample N`` runs a seeded subset of N mutants per module. mutmut keeps its results in ``mutants/``, so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
WRAPPER = Path(__file__).with_name("mutmut_run.py")  # mutmut run, safe with adopted orphans
# mutmut's exit-code meanings (mutmut/stats.py): a timeout means the mutant made a test hang.
KILLED = {1: "killed", 3: "killed", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout"}
UNTESTED = {5: "no tests", 33: "no tests"}


def config() -> tuple[list[str], dict[str, list[str]]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    files = data["tool"]["mutmut"]["only_mutate"]
    functions = data["tool"].get("akmbench-mutation", {}).get("functions", {})
    return files, functions


def module_of(path: str) -> str:
    """The name a module goes by in ``--module`` and the table: its path in the package, e.g. stats/intervals."""
    return str(Path(path).relative_to("pytest_akmbench").with_suffix("")).replace("\\", "/")


def chosen(path: str, modules: list[str]) -> bool:
    """Whether ``--module`` picks this file: all when none is given; a name matches its path or its last part."""
    name = module_of(path)
    return not modules or any(m in (name, name.rsplit("/", 1)[-1]) for m in modules)


def patterns(files: list[str], functions: dict[str, list[str]], modules: list[str]) -> list[str]:
    """mutmut's mutant-name globs for the chosen modules (all when none is chosen)."""
    out = []
    for path in files:
        if not chosen(path, modules):
            continue
        dotted = path.removesuffix(".py").replace("/", ".")
        names = functions.get(path)
        out += [f"{dotted}.x_{name}__mutmut_*" for name in names] if names else [f"{dotted}.*"]
    return out


def results(files: list[str], functions: dict[str, list[str]]) -> dict[str, dict[str, int | None]]:
    """Exit code per mutant name, per module, from mutmut's meta files."""
    out: dict[str, dict[str, int | None]] = {}
    for path in files:
        meta = ROOT / "mutants" / (path + ".meta")
        if not meta.is_file():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        names = functions.get(path)
        if names:
            codes = {k: v for k, v in codes.items() if any(f".x_{n}__mutmut_" in k for n in names)}
        out[module_of(path)] = codes
    return out


def sample(files: list[str], functions: dict[str, list[str]], modules: list[str], size: int, seed: int) -> list[str]:
    """A fixed subset of each chosen module's mutants: ``size`` names drawn with ``random.Random(seed)``
    from all of them (run or not), so the same arguments always pick the same mutants. The names
    come from mutmut's meta file, written when the mutants are generated (by a first run)."""
    out = []
    for path in files:
        meta = ROOT / "mutants" / (path + ".meta")
        if not chosen(path, modules) or not meta.is_file():
            continue
        globs = patterns([path], functions, [])
        names = sorted(
            k for k in json.loads(meta.read_text())["exit_code_by_key"] if any(fnmatch.fnmatchcase(k, g) for g in globs)
        )
        out += sorted(random.Random(f"{seed}:{path}").sample(names, min(size, len(names))))
    return out


def forget_survivors(files: list[str], modules: list[str]) -> int:
    """Mark the survivors of the chosen modules as not run, so the next run tries them against new tests."""
    forgotten = 0
    for path in files:
        meta = ROOT / "mutants" / (path + ".meta")
        if not chosen(path, modules) or not meta.is_file():
            continue
        data = json.loads(meta.read_text())
        codes = data["exit_code_by_key"]
        for key, code in codes.items():
            if code == 0 or code in UNTESTED:
                codes[key] = None
                forgotten += 1
        meta.write_text(json.dumps(data, indent=4))
    return forgotten


def report(files: list[str], functions: dict[str, list[str]], markdown: bool = False) -> int:
    """The score per module: killed / (killed + survived + no tests); mutants not run yet are left out."""
    table = results(files, functions)
    total: Counter[str] = Counter()
    _row = _markdown_row if markdown else _text_row
    if markdown:
        print("| module | mutants | killed | survived | no tests | not run | score |\n|---|--:|--:|--:|--:|--:|--:|")
    else:
        print(f"{'module':<22}{'mutants':>8}{'killed':>8}{'survived':>10}{'no tests':>10}{'not run':>9}{'score':>8}")
    survivors: list[str] = []
    for module, codes in table.items():
        killed = sum(1 for v in codes.values() if v in KILLED)
        survived = sorted(k for k, v in codes.items() if v == 0)
        untested = sorted(k for k, v in codes.items() if v in UNTESTED)
        not_run = sum(1 for v in codes.values() if v is None)
        survivors += survived + untested
        row = Counter(
            mutants=len(codes), killed=killed, survived=len(survived), untested=len(untested), not_run=not_run
        )
        total.update(row)
        print(_row(module, row))
    print(_row("total", total))
    if survivors:
        print("\nsurviving mutants, then mutants no test runs (`mutmut show NAME` prints the diff):")
        print("\n".join(f"  {name}" for name in survivors))
    return 0


def _score(c: Counter[str]) -> str:
    judged = c["killed"] + c["survived"] + c["untested"]
    return f"{c['killed'] / judged:.1%}" if judged else "-"


def _text_row(name: str, c: Counter[str]) -> str:
    return (
        f"{name:<22}{c['mutants']:>8}{c['killed']:>8}{c['survived']:>10}{c['untested']:>10}{c['not_run']:>9}"
        f"{_score(c):>8}"
    )


def _markdown_row(name: str, c: Counter[str]) -> str:
    cells = [name, *(str(c[k]) for k in ("mutants", "killed", "survived", "untested", "not_run")), _score(c)]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.mutation", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--module", action="append", default=[], help="a module, e.g. stats/intervals or intervals (repeatable)"
    )
    parser.add_argument("--report", action="store_true", help="only print the score of the last run")
    parser.add_argument("--markdown", action="store_true", help="print the score table in markdown (docs/testing.md)")
    parser.add_argument("--retry-survivors", action="store_true", help="run the survivors again (after adding tests)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--sample", type=int, metavar="N", help="run only N mutants per module, a seeded subset")
    parser.add_argument("--seed", type=int, default=19, help="the seed of --sample's subset (default 19)")
    args = parser.parse_args(argv)
    files, functions = config()
    if args.retry_survivors:
        print(f"{forget_survivors(files, args.module)} survivors to run again")
    if not args.report:
        globs = patterns(files, functions, args.module)
        if globs and args.sample:
            globs = sample(files, functions, args.module, args.sample, args.seed)
            if not globs:
                parser.error(
                    "--sample needs the mutants generated first: run the module once (Ctrl-C after 'Generating mutants')"
                )
        if not globs:
            parser.error(f"no module named {args.module}; known: {', '.join(module_of(f) for f in files)}")
        run = subprocess.run(
            [sys.executable, str(WRAPPER), "run", "--max-children", str(args.max_children), *globs], cwd=ROOT
        )
        if run.returncode not in (0, 1):
            return run.returncode
    return report(files, functions, args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
