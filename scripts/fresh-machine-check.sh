#!/usr/bin/env bash
# Proves the README's promise instead of trusting the developer's machine:
# builds a bare Debian bookworm root with debootstrap (--variant=minbase: no
# compiler, no CMake, nothing but dpkg and apt), puts a clean clone of HEAD in
# it and runs the README's two commands there, `scripts/test.sh` and then
# `scripts/run.sh --quick`. Every package beyond the base has to come from
# scripts/setup-deps.sh, so a package missing from that list fails here.
#
#   scripts/fresh-machine-check.sh [--keep] [--dir DIR]
#
# Needs root (debootstrap, mount, chroot) and network access to the Debian
# archive this machine's own apt sources name; the mirror is read from them.
# Takes 9 to 14 minutes on 2 cores (most of it the package install and
# the build).
# The root (about 3 GB) goes in DIR (default: a new directory under
# ${TMPDIR:-/var/tmp}) and is deleted at the end unless --keep is given.
# Only committed work is checked: the clone is of HEAD, not of the working
# tree.
set -euo pipefail

# Mounts made below live in a private mount namespace, so that they vanish
# with this process even if it is killed before the trap runs, and never
# show up in the host's mount table.
if [ -z "${W4JIT_FRESH_IN_NS:-}" ] && [ "$(id -u)" -eq 0 ]; then
  export W4JIT_FRESH_IN_NS=1
  exec unshare --mount --propagation private bash "$0" "$@"
fi

keep=0
scratch=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --dir) scratch="$2"; shift ;;
    *) echo "usage: $0 [--keep] [--dir DIR]" >&2; exit 2 ;;
  esac
  shift
done

repo="$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)"
commit="$(git -C "$repo" rev-parse HEAD)"
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine-check: must run as root (debootstrap, mount, chroot)" >&2; exit 1; }

# debootstrap is this check's own tool, not a build dependency: install it
# here when missing (a new machine of this kind does not have it).
if ! command -v debootstrap >/dev/null; then
  echo "fresh-machine-check: installing debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
for tool in debootstrap chroot; do
  command -v "$tool" >/dev/null || {
    echo "fresh-machine-check: $tool is missing (apt-get install debootstrap)" >&2; exit 1; }
done

# --- The Debian archive entries of this machine's apt sources -------------
# Prints "URI SUITE COMPONENTS..." for every enabled deb entry, from the
# one-line format (sources.list, *.list) and the deb822 format (*.sources).
apt_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' "$f" | awk '$1 == "deb" {
      i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      line = $i; for (j = i + 1; j <= NF; j++) line = line " " $j; print line }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() {
           if (types ~ /(^| )deb( |$)/ && enabled != "no")
             for (u = 1; u <= nu; u++) for (s = 1; s <= ns; s++)
               print uris[u], suites[s], comps
           types = ""; enabled = ""; comps = ""; nu = 0; ns = 0 }
         /^[ \t]*#/ { next }
         /^[ \t]*$/ { flush(); next }
         { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
           if (key == "types") types = $0
           else if (key == "uris") nu = split($0, uris, " ")
           else if (key == "suites") ns = split($0, suites, " ")
           else if (key == "components") comps = $0
           else if (key == "enabled") enabled = tolower($0) }
         END { flush() }' "$f"
  done
}
entries="$(apt_entries | awk '$2 ~ /^bookworm(-updates|-security|\/updates)?$/')"
mirror="$(echo "$entries" | awk '$2 == "bookworm" { print $1; exit }')"
[ -n "$mirror" ] || {
  echo "fresh-machine-check: no 'bookworm' deb entry in this machine's apt sources" >&2; exit 1; }

# --- Scratch directory, mounts and their cleanup --------------------------
if [ -n "$scratch" ]; then
  # The whole directory is deleted at the end: never one that holds anything.
  if [ -e "$scratch" ] && [ -n "$(ls -A "$scratch")" ]; then
    echo "fresh-machine-check: --dir $scratch exists and is not empty" >&2; exit 2
  fi
  mkdir -p "$scratch"
else
  scratch="$(mktemp -d "${TMPDIR:-/var/tmp}/w4jit-fresh.XXXXXX")"
fi
root="$scratch/root"
mkdir -p "$root"
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
  done
  mounted=()
  if [ "$keep" -eq 0 ]; then
    # --one-file-system: never follow a mount that somehow survived.
    rm -rf --one-file-system "$scratch"
  else
    echo "fresh-machine-check: kept $scratch"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_in_root() {  # TYPE-OR---bind SOURCE TARGET
  mkdir -p "$root$3"
  if [ "$1" = --bind ]; then mount --bind "$2" "$root$3"; else mount -t "$1" "$2" "$root$3"; fi
  mounted+=("$root$3")
}

phase_start=0
total_start=$(date +%s)
declare -a timings=()
phase() { phase_start=$(date +%s); echo; echo "=== fresh-machine-check: $1"; }
phase_done() { timings+=("$(printf '%-34s %5ds' "$1" $(($(date +%s) - phase_start)))"); }

in_root() {  # Runs a command in the root with a clean login environment.
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

echo "fresh-machine-check: commit $commit, mirror $mirror, root $root"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "fresh-machine-check: note: uncommitted changes are not part of the check"
fi

phase "debootstrap --variant=minbase bookworm"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$scratch/debootstrap.log" 2>&1 || {
  tail -n 30 "$scratch/debootstrap.log" >&2; exit 1; }
phase_done debootstrap

phase "apt sources (this machine's Debian entries) and mounts"
echo "$entries" | awk '{ print "deb " $0 }' >"$root/etc/apt/sources.list"
cat "$root/etc/apt/sources.list"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mount_in_root proc proc /proc
mount_in_root sysfs sysfs /sys
mount_in_root --bind /dev /dev
mount_in_root --bind /dev/pts /dev/pts
mount_in_root tmpfs tmpfs /dev/shm
in_root dpkg-query -W -f='${Package}\n' | sort >"$scratch/packages-base.txt"
echo "base root: $(wc -l <"$scratch/packages-base.txt") packages"
phase_done "sources + mounts"

phase "clean clone of HEAD"
git clone --quiet --no-local --no-checkout "$repo" "$root/root/w4jit"
git -C "$root/root/w4jit" checkout --quiet --detach "$commit"
phase_done clone

# Passes output through and records when the build and ctest start, so
# that the time of scripts/test.sh splits into install, build and tests.
mark_steps() {
  local line build=0 tests=0
  while IFS= read -r line; do
    printf '%s\n' "$line"
    if [ "$build" -eq 0 ] && [[ "$line" =~ ^\[[0-9]+/[0-9]+\] ]]; then
      build=1; echo "$(($(date +%s) - phase_start))" >"$scratch/build-start"
    elif [ "$tests" -eq 0 ] && [[ "$line" == "Test project "* ]]; then
      tests=1; echo "$(($(date +%s) - phase_start))" >"$scratch/tests-start"
    fi
  done
}

status=0
phase "scripts/test.sh (installs the packages, builds, runs ctest)"
set +e
in_root bash -c 'cd /root/w4jit && scripts/test.sh' 2>&1 | mark_steps
status=${PIPESTATUS[0]}
set -e
phase_done "scripts/test.sh"
if [ -f "$scratch/build-start" ] && [ -f "$scratch/tests-start" ]; then
  b=$(cat "$scratch/build-start"); t=$(cat "$scratch/tests-start")
  timings+=("$(printf '  %-32s %5ds' "packages + configure" "$b")")
  timings+=("$(printf '  %-32s %5ds' "build" $((t - b)))")
  timings+=("$(printf '  %-32s %5ds' "ctest" $(($(date +%s) - phase_start - t)))")
fi

if [ "$status" -eq 0 ]; then
  phase "scripts/run.sh --quick"
  in_root bash -c 'cd /root/w4jit && scripts/run.sh --quick' || status=$?
  phase_done "scripts/run.sh --quick"
fi

in_root dpkg-query -W -f='${Package}\n' | sort >"$scratch/packages-after.txt"
comm -13 "$scratch/packages-base.txt" "$scratch/packages-after.txt" >"$scratch/packages-added.txt"
echo
echo "=== fresh-machine-check: packages beyond the debootstrap base: $(wc -l <"$scratch/packages-added.txt")"
named="$(bash -c 'eval "$(sed -n "/^PACKAGES=(/,/^)/p" "$1")"; printf "%s\n" "${PACKAGES[@]}"' _ \
  "$root/root/w4jit/scripts/setup-deps.sh" | sort)"
echo "named by scripts/setup-deps.sh:"
echo "$named" | tr '\n' ' ' | fold -s -w 100; echo
echo "all of them (with what those pulled in):"
tr '\n' ' ' <"$scratch/packages-added.txt" | fold -s -w 100; echo
echo
echo "=== fresh-machine-check: timings"
printf '%s\n' "${timings[@]}"
printf '%-34s %5ds\n' total $(($(date +%s) - total_start))
if [ "$status" -eq 0 ]; then
  echo "fresh-machine-check: PASS (commit $commit)"
else
  echo "fresh-machine-check: FAIL, exit status $status (commit $commit)"
fi
exit "$status"
