#!/usr/bin/env bash
# Make the toolchain rust-toolchain.toml pins available without a download.
#
# rustup installs a pinned toolchain it does not have on first use; this machine reaches no
# toolchain server. When the machine's stable toolchain *is* the pinned release, it is registered
# under the pinned name (a link in rustup's toolchain directory, as `rustup toolchain install`
# would leave it). Any other release fails here, naming what to install, instead of failing later
# inside cargo. The Makefile runs this once per `make` (it is idempotent and takes milliseconds).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
want="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$ROOT/rust-toolchain.toml")"
command -v rustup >/dev/null || exit 0   # a toolchain without rustup: cargo says what it is
host="$(RUSTUP_TOOLCHAIN=stable rustc -vV | sed -n 's/^host: //p')"
home="${RUSTUP_HOME:-$HOME/.rustup}"
[[ -e "$home/toolchains/$want-$host" ]] && exit 0
have="$(RUSTUP_TOOLCHAIN=stable rustc --version | awk '{print $2}')"
if [[ "$have" != "$want" ]]; then
  echo "toolchain.sh: rust-toolchain.toml pins $want; this machine's stable is $have. Install it: rustup toolchain install $want --component clippy rustfmt" >&2
  exit 1
fi
ln -s "$(RUSTUP_TOOLCHAIN=stable rustc --print sysroot)" "$home/toolchains/$want-$host"
echo "toolchain.sh: registered the stable toolchain ($have) as $want-$host" >&2
