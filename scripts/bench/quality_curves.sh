# The evaluation of scripts/bench/gpu_quality.sh (sourced by it after scripts/gpu/kit_steps.sh,
# whose metric_value it uses; it sets bin, ref, python, device, log, data, SG2_QUALITY_PARALLEL):
# every run's snapshots by one evaluator, then the table.

# The kimg in a snapshot's name: network-snapshot-000008.pt is 8, network-snapshot-000000.512.pt 0.512.
snapshot_kimg() {  # snapshot_kimg FILE
  local name=${1##*network-snapshot-}
  name=${name%.pt}
  name=${name%.pkl}
  awk -v k="$name" 'BEGIN { printf "%g\n", k + 0 }'
}

# Prints "RUN KIMG SNAPSHOT" for every snapshot of each run under WORK (ours/, reference-SEED/) whose
# kimg is a multiple of EVERY (0: every snapshot).
list_snapshots() {  # list_snapshots WORK EVERY
  local file run kimg
  while IFS= read -r file; do
    run=${file#"$1"/}
    run=${run%%/*}
    kimg=$(snapshot_kimg "$file")
    if [ "$2" = 0 ] || awk -v k="$kimg" -v e="$2" 'BEGIN { exit !(k % e == 0) }'; then
      echo "$run $kimg $file"
    fi
  done < <(find "$1"/ours "$1"/reference-* \( -name 'network-snapshot-*.pt' -o -name 'network-snapshot-*.pkl' \) \
             2>/dev/null | sort)
}

# A reference pickle as a snapshot of ours: export_pkl.py (its state dict and options, with its float16
# blocks), then stylegan2_import. A pickle cut short by the trainings' time limit fails here, and is left out.
import_pickle() {  # import_pickle PKL OUT_PREFIX: prints the snapshot's path
  "$python" scripts/export_pkl.py --repo "$ref" --pkl "$1" --out "$2" >> "$log" 2>&1 &&
    "$bin/stylegan2_import" --state-dict "$2.pt" --config "$2.json" --out "$2-snapshot.pt" >> "$log" 2>&1 &&
    echo "$2-snapshot.pt"
}

# One line "RUN KIMG VALUE" of METRIC for SNAPSHOT (a reference pickle is imported first, and its
# files removed after); none once SG2_QUALITY_EVAL_UNTIL (epoch seconds) has passed.
evaluate_one() {  # evaluate_one METRIC RUN KIMG SNAPSHOT
  local metric=$1 run=$2 kimg=$3 network=$4 value imported=""
  if [ "$(date +%s)" -ge "${SG2_QUALITY_EVAL_UNTIL:-9999999999}" ]; then
    echo "quality: $run at $kimg kimg: not evaluated, SG2_QUALITY_EVAL_S had passed" >> "$log"
    return 0
  fi
  if [[ "$network" == *.pkl ]]; then
    imported="$(dirname "$network")/imported-$kimg"
    network=$(import_pickle "$network" "$imported") ||
      { echo "quality: $run at $kimg kimg: its pickle did not import (see above)" >> "$log"; return 0; }
  fi
  value=$("$bin/stylegan2_metrics" --network "$network" --metrics "$metric" --data "$data" \
            --detector "$detector" --no-log --run.device "$device" 2>> "$log" | metric_value "$metric")
  [ -z "$imported" ] || rm -f "$imported.pt" "$imported.json" "$imported-snapshot.pt"
  [ -n "$value" ] && echo "$run $kimg $value" || echo "quality: $run at $kimg kimg: no $metric (see above)" >> "$log"
}

# The listed snapshots less ours past the furthest the reference reached (no curve to compare with).
comparable_snapshots() {  # comparable_snapshots WORK EVERY
  list_snapshots "$1" "$2" | awk '{ line[NR] = $0; run[NR] = $1; kimg[NR] = $2 + 0
      if ($1 != "ours" && $2 + 0 > reached) reached = $2 + 0; if ($1 != "ours") any = 1 }
    END { for (i = 1; i <= NR; i++) if (!any || run[i] != "ours" || kimg[i] <= reached) print line[i] }'
}

# Every comparable snapshot of WORK's runs, by kimg: the first alone (it computes the reals'
# statistics, which the others then read from the cache), the rest SG2_QUALITY_PARALLEL at a time.
evaluate_all() {  # evaluate_all WORK EVERY METRIC
  local list first
  list=$(comparable_snapshots "$1" "$2" | sort -k2,2g -k1,1)  # by kimg: a cut-off evaluation drops the latest
  [ -n "$list" ] || { echo "quality: no snapshots under $1" >> "$log"; return 0; }
  export -f metric_value import_pickle evaluate_one
  export bin ref python device log data detector
  first=$(head -n 1 <<< "$list")
  evaluate_one "$3" $first
  tail -n +2 <<< "$list" | xargs -r -P "${SG2_QUALITY_PARALLEL:-6}" -L 1 bash -c 'evaluate_one "$0" "$@"' "$3"
}

# The markdown table of the "RUN KIMG VALUE" lines in FILE: a row a kimg, ours and each reference
# seed, and where ours falls against the seeds' spread.
quality_table() {  # quality_table FILE METRIC RESUME_KIMG SEEDS
  "$python" - "$@" << 'PY'
import collections, sys
path, metric, resume_kimg, seeds = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4].split()
values = collections.defaultdict(dict)
for line in open(path):
    parts = line.split()
    if len(parts) == 3:
        values[float(parts[1])][parts[0]] = float(parts[2])
runs = ['ours'] + [f'reference-{seed}' for seed in seeds]
print(f'| kimg | ours ({metric}) | ' + ' | '.join(f'stylegan2-ada-pytorch, seed {s}' for s in seeds)
      + ' | ours against the seeds |')
print('|---|---|' + '---|' * len(seeds) + '---|')
within = compared = 0
for kimg in sorted(values):
    row = values[kimg]
    cells = [f'{row[run]:.2f}' if run in row else '-' for run in runs]
    verdict = '-'
    refs = [row[run] for run in runs[1:] if run in row]
    if 'ours' in row and len(refs) == len(seeds) and kimg > 0:
        compared += 1
        low, high = min(refs), max(refs)
        if row['ours'] <= high:
            within += 1
            verdict = 'below the best seed' if row['ours'] < low else 'within the spread'
        else:
            verdict = f'{row["ours"] / high:.2f}x the worse seed'
    mark = ' (resumed here)' if kimg == resume_kimg else ''
    print(f'| {kimg:g}{mark} | ' + ' | '.join(cells) + f' | {verdict} |')
print()
print(f'Ours at or below the worse reference seed at {within} of {compared} kimg points past 0 '
      f'(goal: within the spread between the seeds at every point).')
PY
}
