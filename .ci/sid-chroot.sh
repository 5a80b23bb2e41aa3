# Sourced by .ci/cross and .ci/pseries: the Debian sid chroot they build in,
# made once and reused, and how to run a command in it.
#
# $HWSTAT_CROSS_ROOT (default /var/cache/hwstat-cross) holds the chroot
# (sid/), cargo's registry copy and the target directory (sid/cache/).
# Crates come from the host: `cargo fetch` here, then the chroot's cargo
# builds offline from a copy of the host's registry cache, so the chroot
# needs no network access beyond Debian's mirror. Needs root, debootstrap
# and Debian's mirror. Expects the repository as the working directory.

CACHE=${HWSTAT_CROSS_ROOT:-/var/cache/hwstat-cross}
ROOT=$CACHE/sid
REPO=$(pwd)
MIRROR=${HWSTAT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
export DEBIAN_FRONTEND=noninteractive

stage_start=0
stage() { stage_start=$(date +%s%N); echo "== $1"; }
stage_end() {
    local ms=$((($(date +%s%N) - stage_start) / 1000000))
    printf '== %s: %d.%d s\n' "$1" $((ms / 1000)) $((ms % 1000 / 100))
}

# Takes the cache's lock (one run at a time per cache) and makes the chroot
# if it is not there yet.
sid_chroot_ready() {
    mkdir -p "$CACHE"
    exec 9>"$CACHE/lock"
    flock 9
    if [ ! -e "$ROOT/.hwstat-bootstrapped" ]; then
        if ! command -v debootstrap >/dev/null; then
            apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null
        fi
        stage "debootstrap sid"
        rm -rf "$ROOT"
        debootstrap --variant=minbase sid "$ROOT" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
            { tail -20 "$CACHE/debootstrap.log"; return 1; }
        # This machine's clock can be past the archive's Valid-Until.
        echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99hwstat"
        touch "$ROOT/.hwstat-bootstrapped"
        stage_end "debootstrap sid"
    fi
}

# Runs a command in the chroot with /proc and /dev, in a private mount
# namespace so nothing stays mounted, with the repository at /src (read-only).
# The chroot's /cache holds the registry copy (CARGO_HOME) and target dir.
# With $CHROOT_WORK set, that host directory is mounted at /work too.
in_chroot() {
    unshare --mount --propagation private -- bash -c '
        set -e
        root=$1; repo=$2; work=$3; shift 3
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mkdir -p "$root/src"
        mount --bind "$repo" "$root/src"
        mount -o remount,bind,ro "$root/src"
        if [ -n "$work" ]; then
            mkdir -p "$root/work"
            mount --bind "$work" "$root/work"
        fi
        exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
    ' in_chroot "$ROOT" "$REPO" "${CHROOT_WORK:-}" "$@"
}

# Installs PACKAGES... in the chroot unless the list under MARKER (a file
# name in the chroot's root) says they are there already.
chroot_packages() {
    local marker=$1
    shift
    if [ ! -e "$ROOT/$marker" ] || [ "$(cat "$ROOT/$marker")" != "$*" ]; then
        stage "packages ($marker)"
        in_chroot sh -c "dpkg --add-architecture ppc64el && dpkg --add-architecture arm64 &&
            apt-get update -qq && apt-get install -y -qq --no-install-recommends $*" \
            >"$CACHE/packages.log" 2>&1 || { tail -20 "$CACHE/packages.log"; return 1; }
        echo "$*" >"$ROOT/$marker"
        stage_end "packages ($marker)"
    fi
}

# Copies the host's crates (after `cargo fetch`) into the chroot's CARGO_HOME.
chroot_crates() {
    stage "crates"
    cargo fetch --locked --quiet
    local host_registry=${CARGO_HOME:-$HOME/.cargo}/registry
    mkdir -p "$ROOT/cache/cargo-home/registry"
    cp -a "$host_registry/cache" "$host_registry/index" "$ROOT/cache/cargo-home/registry/"
    stage_end "crates"
}

# The environment of a cross build in the chroot.
cross_env=(CARGO_HOME=/cache/cargo-home CARGO_TARGET_DIR=/cache/target
    CARGO_TARGET_POWERPC64LE_UNKNOWN_LINUX_GNU_LINKER=powerpc64le-linux-gnu-gcc
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
    CARGO_TARGET_POWERPC64LE_UNKNOWN_LINUX_GNU_RUNNER="qemu-ppc64le -L /usr/powerpc64le-linux-gnu"
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu")
