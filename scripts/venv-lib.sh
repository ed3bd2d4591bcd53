# Sourced by the scripts that keep a Python virtualenv (venv.sh, checkov.sh, sam-lib.sh).
#
# A virtualenv lives outside the clone, in $HOLDFAST_VENV_CACHE (default
# ~/.cache/holdfast-venvs), under a name keyed by the Python version and the requirement files'
# contents; the clone's .venv / .venv-checkov is a symlink to it. A fresh clone on a machine that
# has run `make test` before then finds its tools installed, as cargo finds its build cache in
# $CARGO_TARGET_DIR; a changed requirements file makes a new one. HOLDFAST_VENV_CACHE=off keeps
# the virtualenvs inside the clone.

# venv_link LINK REQ...: points LINK at the cached virtualenv for REQ...; prints the directory
# the virtualenv is (to be) created in.
venv_link() {
  local link="$1" cache="${HOLDFAST_VENV_CACHE:-$HOME/.cache/holdfast-venvs}" key target
  shift
  if [[ "$cache" == off ]]; then
    [[ -L "$link" ]] && rm -f "$link"
    echo "$link"
    return
  fi
  # "real-path": pip writes each script's #! line from the interpreter it ran as, so installs go
  # through the cache's own path (never a clone's link, which may be deleted with its clone)
  key="$({ "${PYTHON:-python3}" --version 2>&1; echo real-path; cat "$@"; } | sha256sum | cut -c1-16)"
  target="$cache/$(basename "$link" | tr -d .)-$key"
  mkdir -p "$cache"
  if [[ "$(readlink "$link" 2>/dev/null)" != "$target" ]]; then
    rm -rf "$link"
    ln -s "$target" "$link"
  fi
  echo "$target"
}

# stamp_current STAMP REQ...: whether STAMP records the current contents of REQ...
stamp_current() {
  local stamp="$1"
  shift
  [[ -f "$stamp" && "$(cat "$stamp")" == "$(cat "$@" | sha256sum | cut -c1-64)" ]]
}

# stamp_write STAMP REQ...: records the contents of REQ... as installed.
stamp_write() {
  local stamp="$1"
  shift
  cat "$@" | sha256sum | cut -c1-64 >"$stamp"
}
