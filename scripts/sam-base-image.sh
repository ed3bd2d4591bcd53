#!/usr/bin/env bash
# A Lambda-like base image for `sam local --invoke-image`, from this machine's own files: no
# image registry is needed (or reachable). SAM CLI adds its runtime interface emulator on top
# (a `docker build` with `ADD aws-lambda-rie` + `RUN mv … && chmod +x …`) and mounts the
# function's bootstrap at /var/task, so the image needs only:
#   - /bin/sh, mv, chmod for SAM's RUN line, and the shared libraries they link;
#   - the shared libraries the bootstraps link (ldd: libc, libm, libgcc_s, the loader);
#   - CA certificates (the SDK's TLS stack loads them even when the emulator is plain HTTP);
#   - /tmp, /var/task, /var/runtime, /opt and a passwd/group, as a Lambda environment has.
# The rootfs is assembled in .aws-sam/base-rootfs and `docker import`ed. The image is only
# replaced when its content changed (a digest kept in the image's environment), and SAM's
# derived "rapid" image is then dropped so SAM rebuilds it on the new base.
#
# Usage: scripts/sam-base-image.sh IMAGE:TAG BOOTSTRAP...
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${1:?usage: $0 IMAGE:TAG BOOTSTRAP...}"
shift
[[ $# -gt 0 ]] || { echo "sam-base-image: no bootstrap given" >&2; exit 2; }
ROOTFS="$ROOT/.aws-sam/base-rootfs"
log() { echo "sam-base-image: $*" >&2; }

TOOLS=(/bin/sh /bin/mv /bin/chmod /bin/cp /bin/rm /bin/ls /bin/cat)
CA=/etc/ssl/certs/ca-certificates.crt
[[ -f "$CA" ]] || { log "no CA bundle at $CA"; exit 1; }

rm -rf "$ROOTFS"
mkdir -p "$ROOTFS"/{bin,etc/ssl/certs,tmp,var/task,var/runtime,opt,root}
chmod 1777 "$ROOTFS/tmp"

# Every file a binary loads at start: the paths ldd prints (`lib => /path (addr)` and the
# loader's bare `/path (addr)`), copied with symlinks resolved to the path the loader asks for.
libs() {
  ldd "$1" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'
}
declare -A files=()
for t in "${TOOLS[@]}"; do
  [[ -x "$t" ]] || { log "missing $t on this machine"; exit 1; }
  cp -L "$t" "$ROOTFS/bin/$(basename "$t")"
  for l in $(libs "$t"); do files[$l]=1; done
done
for b in "$@"; do
  [[ -x "$b" ]] || { log "no such bootstrap: $b"; exit 1; }
  if ! ldd "$b" >/dev/null 2>&1; then
    log "$b is not a dynamic executable for this machine"; exit 1
  fi
  for l in $(libs "$b"); do files[$l]=1; done
done
for f in "${!files[@]}"; do
  mkdir -p "$ROOTFS$(dirname "$f")"
  cp -L "$f" "$ROOTFS$f"
done
cp -L "$CA" "$ROOTFS$CA"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$ROOTFS/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$ROOTFS/etc/group"

# Same files, same digest: sort names, fixed owner and times.
TAR="$ROOT/.aws-sam/base-rootfs.tar"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$ROOTFS" -cf "$TAR" .
DIGEST="$(sha256sum "$TAR" | cut -c1-16)"
have="$(docker image inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE" 2>/dev/null |
  sed -n 's/^HOLDFAST_BASE_DIGEST=//p' || true)"
if [[ "$have" == "$DIGEST" ]]; then
  log "$IMAGE is current ($DIGEST)"
  exit 0
fi
docker import \
  --change "ENV PATH=/bin:/usr/bin" \
  --change "ENV HOLDFAST_BASE_DIGEST=$DIGEST" \
  --change "WORKDIR /var/task" \
  "$TAR" "$IMAGE" >/dev/null
# SAM names its derived image <repo>:rapid-<arch> and builds it only when missing.
docker image rm -f "${IMAGE%%:*}:rapid-${IMAGE##*:}" >/dev/null 2>&1 || true
log "$IMAGE built ($DIGEST, $(du -sh "$TAR" | cut -f1) from ${#files[@]} libraries + ${#TOOLS[@]} tools)"
