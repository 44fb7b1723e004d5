#!/usr/bin/env bash
# A real Slurm cluster (scripts/slurm-local: slurmctld, slurmd and munged on this machine) runs a
# 4-task job array (sbatch --array=0-3 --wait) of `repro-audit run --shard auto`, each task one
# shard of two audits of configs/quick.json sharing their folders: a deterministic one, and a
# nondeterministic --seeds both one (one thread, so runs repeat; a fault in run 1 makes it part).
# `compare` of each folder must give the single-process audit's report: the same JSON but for
# where the traces lie and time. Skipped (exit 77) without root or Slurm
# (REPRO_AUDIT_WITH_SLURM=1 scripts/setup installs it).
# Usage: slurm_shards_test.sh REPRO_AUDIT_BINARY SOURCE_DIR
set -euo pipefail
binary=$1
source_dir=$2
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "a single-node Slurm needs root"
for c in sbatch slurmctld slurmd munged python3; do
  command -v "$c" > /dev/null || skip "$c not installed (REPRO_AUDIT_WITH_SLURM=1 scripts/setup)"
done

work=$(mktemp -d /tmp/ra-slurm-XXXXXX)
chmod 755 "$work"  # munged wants every folder above its socket searchable by all
cleanup() {
  "$source_dir/scripts/slurm-local" stop "$work/cluster" || true
  rm -rf "$work"
}
trap cleanup EXIT
# A port of our own, so a cluster another test or user runs on the default is left alone.
export SLURM_LOCAL_PORT=$((20000 + $$ % 20000 * 2))
exports=$("$source_dir/scripts/slurm-local" start "$work/cluster") \
  || { echo "FAILED: the Slurm cluster did not start"; exit 1; }
eval "$exports"

spec="$source_dir/configs/quick.json"
# shellcheck disable=SC2054  # the commas are the fault spec's, inside one word
both_options=(--runs 2 --seeds both --mode nondeterministic --threads 1
              --inject-fault run=1,step=3,tensor=conv2d_0.weight,bit=12)
# Each task writes its own exit status: the verdict on the job array is the tasks' statuses, not
# sbatch's. `sbatch --wait` polls the controller and can fail on its own (a timed-out poll under
# load) while every task succeeded; a task that failed is named with its status and its log.
cat > "$work/shard.sh" <<JOB
#!/usr/bin/env bash
trap 'echo \$? > "$work/task-\$SLURM_ARRAY_TASK_ID.status"' EXIT
set -e
"$binary" run "$spec" --runs 4 --shard auto --out "$work/deterministic"
"$binary" run "$spec" ${both_options[*]} --shard auto --out "$work/both"
JOB
chmod +x "$work/shard.sh"

echo "submitting a 4-task job array"
sbatch_rc=0
sbatch --array=0-3 --wait --cpus-per-task=1 --output="$work/task-%a.log" "$work/shard.sh" \
  > "$work/sbatch.out" 2>&1 || sbatch_rc=$?
cat "$work/sbatch.out"
# The tasks' statuses, once every task of the array has left the queue (a minute at most).
for _ in $(seq 60); do
  [ -z "$(squeue --noheader --array 2> /dev/null)" ] && break
  sleep 1
done
failed=()
for k in 0 1 2 3; do
  status=$(cat "$work/task-$k.status" 2> /dev/null || echo "none (it never ended its script)")
  [ "$status" = 0 ] || failed+=("$k: exit status $status")
done
if [ ${#failed[@]} -gt 0 ]; then
  for k in 0 1 2 3; do echo "==> task $k's log"; tail -n 15 "$work/task-$k.log" 2> /dev/null; done
  echo "==> slurmd's and slurmctld's logs"
  tail -n 15 "$work"/cluster/log/*.log 2> /dev/null || true
  echo "FAILED: the job array failed (sbatch exit $sbatch_rc); task(s) ${failed[*]}"
  exit 1
fi
[ "$sbatch_rc" = 0 ] || echo "note: sbatch --wait exited $sbatch_rc, but every task exited 0"
for k in 0 1 2 3; do
  grep -q "^shard $k/4: run(s) $k of 4 planned" "$work/task-$k.log" \
    || { cat "$work/task-$k.log"; echo "FAILED: task $k did not train shard $k/4"; exit 1; }
done

# The single-process audits, and the comparison of their reports with the merged ones.
"$binary" run "$spec" --runs 4 --out "$work/single-deterministic" --json "$work/single-deterministic.json" > /dev/null
"$binary" run "$spec" "${both_options[@]}" --out "$work/single-both" --json "$work/single-both.json" \
  > /dev/null
"$binary" compare "$work/deterministic" --json "$work/merged-deterministic.json" > "$work/merged.txt"
set +e
"$binary" compare "$work/both" --json "$work/merged-both.json" > /dev/null
both_rc=$?
set -e
[ "$both_rc" = 0 ] || { echo "FAILED: compare of the --seeds both folder exited $both_rc"; exit 1; }
cat "$work/merged.txt"

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]

def comparable(report):
    report.pop("audit_folders")
    for run in report["runs"]:
        for key in ("source", "median_step_ms", "total_seconds", "recording_fraction"):
            run.pop(key)
    groups = report["statistics"]
    for group in groups.values() if isinstance(groups, dict) else groups:
        group.pop("median_step_ms")
    # The command of the next step is the one that made the report (run knows it, compare not).
    if report.get("next_step"):
        report["next_step"].pop("command")
    return report

for name, runs, identical in (("deterministic", 4, True), ("both", 4, False)):
    merged = json.load(open(f"{work}/merged-{name}.json"))
    single = json.load(open(f"{work}/single-{name}.json"))
    folder = merged["audit_folders"][0]
    assert folder["shards"]["count"] == 4, folder
    assert all(s["finished"] for s in folder["shards"]["states"]), folder
    assert merged["verdict"]["complete"], merged["verdict"]
    assert len(merged["runs"]) == runs, len(merged["runs"])
    assert merged["verdict"]["identical"] == identical, merged["verdict"]
    a, b = comparable(merged), comparable(single)
    if a != b:
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                print(f"FAILED: {name}: '{key}' differs:\n  sharded {a.get(key)}\n  single  {b.get(key)}")
        sys.exit(1)
    print(f"{name}: the merged report of 4 shards is the single-process report")
PY
echo "PASSED"
