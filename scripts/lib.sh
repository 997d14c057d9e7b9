# Shared setup for scripts/demo and scripts/test: a .venv with dpspark installed, and a Java >= 17 for Spark.
# Sourced, not executed. Idempotent: a second run only checks.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

log() { printf '[dpspark] %s\n' "$*" >&2; }

# quiet_jvm CMD...: run CMD with the one line Java prints for Spark's incubating vector module dropped from its
# stderr (the launcher always adds the module; the line comes before any log configuration applies). Every
# other stderr line is kept; the exit status is CMD's.
quiet_jvm() {
  "$@" 2> >(grep -v --line-buffered '^WARNING: Using incubator modules' >&2)
}

find_python() {
  for cand in python3.11 python3.12 python3.13 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      command -v "$cand"; return 0
    fi
  done
  log "Python >= 3.11 not found. Install it (e.g. 'apt-get install -y python3.11 python3.11-venv') and rerun."
  return 1
}

# ensure_venv EXTRAS: create .venv if needed, (re)install when pyproject.toml changed.
ensure_venv() {
  local extras="$1"
  if [ ! -x "$PY" ]; then
    local base; base="$(find_python)"
    log "creating $VENV with $base"
    local t_venv=$SECONDS
    "$base" -m venv "$VENV"
    "$PY" -m pip install -q --upgrade pip
    log "created $VENV in $((SECONDS - t_venv)) s"
  fi
  local stamp="$VENV/.dpspark-installed-$extras"
  local want; want="$(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "installing dpspark[$extras] into .venv with pip (pyspark is a large download; pip is quiet until done)"
    local t0=$SECONDS
    "$PY" -m pip install -q --no-cache-dir -e "$ROOT[$extras]"
    echo "$want" > "$stamp"
    log "installed dpspark[$extras] in $((SECONDS - t0)) s"
  fi
}

java_major() { # prints the major version of the java binary $1, or nothing
  "$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n1
}

java_ok() { # a full JDK/JRE 17 or 21 (Spark 4 needs jdk.incubator.vector, so no trimmed runtimes)
  local bin="$1" major
  [ -x "$bin" ] || return 1
  major="$(java_major "$bin")"
  [ "$major" = "17" ] || [ "$major" = "21" ] || return 1
  "$bin" --list-modules 2>/dev/null | grep -q '^jdk.incubator.vector' || return 1
}

ensure_java() {
  local cand
  for cand in "${JAVA_HOME:-/nonexistent}/bin/java" "$(command -v java 2>/dev/null || true)" /usr/lib/jvm/*/bin/java; do
    [ -n "$cand" ] || continue
    cand="$(readlink -f "$cand" 2>/dev/null || echo "$cand")"
    if java_ok "$cand"; then
      export JAVA_HOME="$(dirname "$(dirname "$cand")")"
      return 0
    fi
  done
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    log "no Java 17/21 found; installing openjdk-17-jre-headless with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    for cand in /usr/lib/jvm/*/bin/java; do
      if java_ok "$cand"; then export JAVA_HOME="$(dirname "$(dirname "$cand")")"; return 0; fi
    done
  fi
  log "Spark 4 needs a full Java 17 or 21, and none was found."
  log "Install one, e.g.:  sudo apt-get install -y openjdk-17-jre-headless   (then rerun)"
  return 1
}

# ensure_cjk_font: `dpspark plot` draws CJK keys with an installed CJK font (dpspark/cli/plotfont.py) and
# falls back to the escaped key text without one. As root on Debian/Ubuntu, install fonts-noto-cjk; otherwise
# only say how. Never fatal.
ensure_cjk_font() {
  if command -v fc-list >/dev/null 2>&1 && fc-list :lang=ja family 2>/dev/null | grep -q .; then
    return 0
  fi
  if [ -d /usr/share/fonts/opentype/noto ] && ls /usr/share/fonts/opentype/noto/NotoSansCJK* >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    log "installing fonts-noto-cjk with apt-get (so plots draw CJK keys)"
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null 2>&1 \
      || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 \
           && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null 2>&1; }; then
      rm -rf "${MPLCONFIGDIR:-$HOME/.cache/matplotlib}"/fontlist-*.json 2>/dev/null || true  # matplotlib's font cache
      return 0
    fi
    log "could not install fonts-noto-cjk; plots show CJK keys in escaped form (\\uXXXX)"
    return 0
  fi
  log "no CJK font found: plots show CJK keys in escaped form (\\uXXXX); to draw them: sudo apt-get install -y fonts-noto-cjk"
  return 0
}

export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="$PY"
export PYSPARK_DRIVER_PYTHON="$PY"
