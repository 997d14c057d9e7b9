#!/usr/bin/env bash
# Create one virtualenv per peer for scripts/bench/groups.py (peers are never dependencies of dpspark).
#
# Usage: bash scripts/bench/peer_venvs.sh [PEER ...]     (default: opendp tumult pipelinedp)
# Venvs go to $PEER_VENVS (default /work/peer-venvs)/<peer>; each gets a marker file `ok` once its
# import check passes, or `failed` with the reason. Already-ok venvs are kept. Python: $PEER_PYTHON
# (default python3.11: Tumult 0.21 and PipelineDP 0.3.1's python-dp need a Python below 3.12/3.13).
set -u
ROOT_DIR=${PEER_VENVS:-/work/peer-venvs}
PY=${PEER_PYTHON:-python3.11}
mkdir -p "$ROOT_DIR"

spec() {  # pip requirements and the import check of one peer
  case "$1" in
    opendp)     echo "opendp[polars]==0.16.* pyarrow pandas|import opendp, polars; from importlib.metadata import version; print('opendp', version('opendp'), 'polars', polars.__version__)";;
    tumult)     echo "tmlt.analytics==0.21.* pyarrow|import tmlt.analytics, pyspark; from importlib.metadata import version; print('tmlt.analytics', version('tmlt.analytics'), 'pyspark', pyspark.__version__)";;
    pipelinedp) echo "pipeline-dp==0.3.1 pyarrow pandas|import pipeline_dp, pydp; from importlib.metadata import version; print('pipeline-dp', version('pipeline-dp'), 'python-dp', version('python-dp'))";;
    *) return 1;;
  esac
}

peers=("$@"); [ ${#peers[@]} -eq 0 ] && peers=(opendp tumult pipelinedp)
for peer in "${peers[@]}"; do
  dir="$ROOT_DIR/$peer"
  if [ -f "$dir/ok" ]; then echo "$peer: ok ($(cat "$dir/ok"))"; continue; fi
  line=$(spec "$peer") || { echo "$peer: unknown peer"; continue; }
  reqs=${line%%|*}; check=${line#*|}
  rm -rf "$dir"
  "$PY" -m venv "$dir" || { mkdir -p "$dir"; echo "venv creation failed ($PY)" > "$dir/failed"; continue; }
  # shellcheck disable=SC2086
  if "$dir/bin/pip" install -q $reqs > "$dir/pip.log" 2>&1 && out=$("$dir/bin/python" -c "$check" 2>>"$dir/pip.log"); then
    echo "$out" > "$dir/ok"; echo "$peer: ok ($out)"
  else
    tail -5 "$dir/pip.log" > "$dir/failed"; echo "$peer: FAILED (see $dir/pip.log)"; cat "$dir/failed"
  fi
done
