#!/usr/bin/env bash
# Mutation testing of the planners, the Kueue renderer and the advisor with mutmut 3 (`make mutation`).
# Slow (docs/testing.md, "Mutation testing"), so not part of `make test`. Fails when a module's
# survivor is neither killed nor explained in tests/mutation/explained.tsv (survivors.py --check).
#
# mutmut 3 copies the code to mutate into mutants/ and names each mutant after the module path of
# the copy, while the tests import the collection as ansible_collections.gpushare.cluster.
# So each module gets build/mutation/MODULE/ with src/ansible_collections/gpushare/cluster/plugins
# (a link to plugins/): mutmut strips "src." from the module name and puts mutants/src first on
# sys.path, so the tests import the mutated copy under the name they always use. tests/ and the
# files they read are copied next to it; conftest.py finds no .collections there, so the checkout
# cannot leak in.
#
# Usage: tests/mutation/run.sh [MODULE...]   (default: all of MODULES, in that order)
#   MUTANTS='glob ...'  only the mutants whose name matches one of these (e.g. '*.x_node_sharing__mutmut_*';
#                       '*__mutmut_*7' is a one-in-ten sample of every function's mutants)
#   MUTMUT_TESTS='...'  this selection (paths under tests/unit/) instead of the module's: survivors re-run
#                       against new tests alone are killed by the union exactly when the new tests kill them
#   MUTMUT_RESUME=1     keep earlier results (only mutants without one run)
#   MUTMUT_CHILDREN=N   workers (default 1: the development machine is shared)
#   MUTMUT_TIME_LIMIT=S stop each module's run after S seconds (mutmut keeps what it has tried)
set -euo pipefail
# mutmut stops a mutant's tests at a CPU-time limit and counts that as a timeout (killed). A
# BLAS thread pool (numpy/scipy in the planners) spends CPU time in several threads at once and
# is not fork-safe, so one thread each keeps the timeouts honest and the cores for the workers.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MUTMUT=${MUTMUT:-mutmut}

# Each module with the tests that check it directly: a mutant runs only those of them that call
# the mutated function, but the end-to-end suites (the advisor's, test_mig_stable.py) call nearly
# everything and cost minutes per surviving mutant.
MODULES=(planners/sharing_planner planners/kueue_quotas renderers/kueue_config advisor/rules
         planners/plan planners/mig_planner advisor/proposal advisor/usage_advisor)
M=plugins/module_utils
# Paths under tests/unit/.
declare -A TESTS=(
    [planners/sharing_planner]="$M/planners/test_plan.py $M/planners/test_mps.py $M/planners/test_mig_strategy.py
        $M/renderers/test_render_helm.py test_advertised_from_manifests.py $M/planners/test_sharing_config.py"
    [planners/kueue_quotas]="$M/planners/test_kueue_quotas.py $M/planners/test_plan.py $M/renderers/test_kueue_config.py
        $M/planners/test_kueue_cohort_policy.py"
    [renderers/kueue_config]="$M/renderers/test_kueue_config.py $M/planners/test_kueue_quotas.py
        $M/renderers/test_kueue_config_yaml.py"
    [advisor/rules]="$M/advisor/test_advisor_rules.py $M/advisor/test_usage_advisor.py $M/advisor/test_advisor_rule_sizing.py $M/advisor/test_advisor_rule_reasons.py
        $M/advisor/test_advisor_mps.py $M/advisor/test_advisor_pooling.py $M/advisor/test_advisor_identity.py
        $M/advisor/test_advisor_repair.py"
    [planners/plan]="$M/planners/test_plan.py $M/planners/test_sharing_windows.py $M/planners/test_mps.py
        $M/planners/test_changes.py $M/planners/test_kueue_quotas.py $M/planners/test_plan_refusals.py $M/planners/test_plan_gpu_assignment.py $M/planners/test_plan_format.py
        $M/inventory/test_bad_input.py $M/inventory/test_first_hour_mistakes.py $M/inventory/test_model_validation.py"
    [planners/mig_planner]="$M/planners/test_mig_planner.py $M/planners/test_mig_strategy.py $M/planners/test_mig_replan_assignment.py
        $M/planners/test_mig_solve_report.py $M/planners/test_mig_solver_stages.py $M/planners/test_mig_whole_gpu_programme.py"
    [advisor/proposal]="$M/advisor/test_advisor_rules.py $M/advisor/test_usage_advisor.py $M/advisor/test_advisor_pooling.py
        $M/advisor/test_advisor_mps.py $M/advisor/test_advisor_identity.py $M/advisor/test_advisor_repair.py
        $M/advisor/test_proposal_placement.py $M/advisor/test_proposal_purchase.py $M/advisor/test_proposal_lending_windows.py
        $M/advisor/test_proposal_team_quotas.py $M/advisor/test_proposal_inventory_entries.py"
    [advisor/usage_advisor]="$M/advisor/test_usage_advisor.py $M/advisor/test_advisor_rules.py
        $M/advisor/test_advisor_identity.py $M/advisor/test_advisor_mps.py $M/advisor/test_advisor_pooling.py
        $M/advisor/test_advisor_repair.py $M/advisor/test_usage_history_window.py $M/advisor/test_usage_window_halves.py
        $M/advisor/test_usage_workload_matching.py"
)

run_module() {
    local module=$1 stage="$ROOT/build/mutation/${1//\//.}" test
    [[ "${MUTMUT_RESUME:-0}" == 1 ]] || rm -rf "$stage"
    mkdir -p "$stage/src/ansible_collections/gpushare/cluster"
    ln -sfn "$ROOT/plugins" "$stage/src/ansible_collections/gpushare/cluster/plugins"
    for copied in tests inventory-examples docs roles plugins; do
        ln -sfn "$ROOT/$copied" "$stage/$copied"
    done
    {
        cat "$ROOT/tests/mutation/setup.cfg"
        echo "only_mutate = src/ansible_collections/gpushare/cluster/plugins/module_utils/$module.py"
        echo "pytest_add_cli_args_test_selection ="
        for test in ${MUTMUT_TESTS:-${TESTS[$module]}}; do
            [[ ! -e "$ROOT/tests/unit/$test" ]] || echo "    tests/unit/$test"
        done
    } > "$stage/setup.cfg"
    local start status=0 mutants
    # The globs go to mutmut as they are, never expanded by the shell.
    set -f
    read -ra mutants <<< "${MUTANTS:-}"
    set +f
    start=$(date +%s)
    # Lowest priority: the machine is shared.
    local limit=()
    [[ -z "${MUTMUT_TIME_LIMIT:-}" ]] || limit=(timeout -s INT "$MUTMUT_TIME_LIMIT")
    (cd "$stage" && ${limit[@]+"${limit[@]}"} nice -n 19 "$MUTMUT" run --max-children "${MUTMUT_CHILDREN:-1}" ${mutants[@]+"${mutants[@]}"}) \
        > "$stage/run.log" 2>&1 || status=$?
    (cd "$stage" && "$MUTMUT" results --all true) > "$stage/results.txt" 2>&1 || true
    python3 - "$module" "$stage/results.txt" "$(( $(date +%s) - start ))" "$status" <<'PY'
import collections, sys
module, results, seconds, status = sys.argv[1:]
counts = collections.Counter(line.rsplit(": ", 1)[1].strip() for line in open(results) if ": " in line)
tried = sum(n for state, n in counts.items() if state != "not checked")
killed = sum(counts[s] for s in ("killed", "timeout", "caught by type check"))
score = "%.1f %%" % (100.0 * killed / tried) if tried else "-"
print("%-24s score %-8s %s  (%s s, mutmut exit %s)" % (module, score, dict(sorted(counts.items())), seconds, status))
PY
    grep -E ": (survived|no tests|suspicious)$" "$stage/results.txt" || true
    # Every survivor needs a test that kills it or a reason in tests/mutation/explained.tsv.
    python3 "$ROOT/tests/mutation/survivors.py" --check "$stage"
}

status=0
for module in "${@:-${MODULES[@]}}"; do
    [[ -n "${TESTS[$module]:-}" ]] || { echo "run.sh: unknown module $module (one of: ${MODULES[*]})" >&2; exit 2; }
    run_module "$module" || status=$?
done
echo "load at the end: $(uptime)"
exit "$status"
