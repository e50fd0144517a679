# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A long fuzz run that lists every distinct failure instead of stopping at the first.

The pytest fuzz test (test_fuzz_inventories.py) stops at the first failing example and
shrinks it; while several crashes are open that hides the others. This runs the same
edits and checks, records each failure under its class (exception type and the innermost
frame in plugins/, or the failed property) and prints one reproducer per class, the one
with the shortest description.

Besides the mutated example inventories it draws realistic fleets (fleets.py, "fleets"
below); every plan made is also rendered (report.md, the split table, split.svg).

It also lists two suspicious outcomes the test does not fail on (yet), marked "review":
a plan that has fewer teams, nodes or workloads than the inventory (an entry silently
dropped), and a plan made although an edit wrote null (an empty YAML value) to a key.

    .venv/bin/python tests/unit/fuzz_report.py [EXAMPLES_PER_INVENTORY] [SEED] [INVENTORY ...]

INVENTORY: example inventory names or "fleets" (default: all of them).
"""

from __future__ import annotations

import copy
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / ".collections")]

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fleets import fleet  # noqa: E402
from inventories import EXAMPLE_NAMES  # noqa: E402
from mutations import get, mutate, replaced_paths  # noqa: E402
from test_fuzz_inventories import BASE, check_plan  # noqa: E402


def failure_class(exc: BaseException) -> str:
    """Exception type plus where it was raised: the innermost frame in the collection's code,
    or the failed assertion's message (its first words) for a broken property."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/plugins/" in f.filename]
    where = ("%s:%s %s" % (Path(ours[-1].filename).name, ours[-1].lineno, ours[-1].name)) if ours else ""
    if isinstance(exc, AssertionError):
        first = str(exc).split(":", maxsplit=1)[0]
        return "property: %s" % " ".join(first.split()[:8])
    return "%s at %s" % (type(exc).__name__, where or Path(frames[-1].filename).name)


def review(variables: dict, edits: list, plan: dict) -> list[str]:
    """Suspicious but not (yet) failing outcomes of a plan; see the module docstring."""
    out = []
    for key, section in (("gpushare_teams", "teams"), ("gpushare_workloads", "workloads"), ("gpushare_nodes", "nodes")):
        given = variables.get(key)
        if isinstance(given, (list, dict)) and len(plan[section]) < len(given):
            out.append("review: %s entry dropped from the plan" % section)
    for e in edits:
        if getattr(e, "loc", None) and e.value is None and e.path not in ("gpushare_policy", "gpushare_workloads"):
            try:
                still = get(variables, e.loc) is None
            except (KeyError, IndexError, TypeError):
                still = False
            if still:
                out.append("review: null accepted at .%s" % e.path.rsplit(".", 1)[-1].split("[")[0])
    return out


def main() -> None:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    run_seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    inventories = sys.argv[3:] or EXAMPLE_NAMES + ["fleets"]
    found: dict[str, tuple[str, list[str], str]] = {}
    counts: dict[str, int] = {}
    stats = {"plans": 0, "invalid": 0, "slowest": 0.0, "slowest_example": ""}

    def record(key, name, edits, message):
        counts[key] = counts.get(key, 0) + 1
        text = "; ".join(edits)
        if key not in found or len(text) < len(found[key][1]):
            found[key] = (name, text, message)

    for name in inventories:
        @seed(run_seed)
        @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def run(data):
            if name == "fleets":
                variables, edits = fleet(data), []
            else:
                variables = copy.deepcopy(BASE[name])
                edits = mutate(data, variables)
            start = time.process_time()
            try:
                plan = check_plan(variables, replaced_paths(edits, variables))
                stats["plans" if plan is not None else "invalid"] += 1
                if plan is not None:
                    for key in review(variables, edits, plan):
                        record(key, name, edits, "")
            except Exception as exc:  # noqa: BLE001 - the point is to collect them all
                record(failure_class(exc), name, edits, "%s: %s" % (type(exc).__name__, str(exc)[:300]))
            elapsed = time.process_time() - start
            if elapsed > stats["slowest"]:
                stats["slowest"], stats["slowest_example"] = elapsed, "%s: %s" % (name, "; ".join(edits))

        began = time.perf_counter()
        run()
        print("%s: %d examples in %.0f s" % (name, examples, time.perf_counter() - began), flush=True)

    print("\nplans %(plans)d, PlanInvalid %(invalid)d, slowest %(slowest).2f s CPU (%(slowest_example)s)" % stats)
    print("%d failure classes\n" % len(found))
    for key in sorted(found, key=lambda k: -counts[k]):
        name, text, message = found[key]
        print("== %s  (%d examples)\n   inventory %s: %s\n   %s\n" % (key, counts[key], name, text, message))


if __name__ == "__main__":
    main()
