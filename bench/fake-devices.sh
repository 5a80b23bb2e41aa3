# Sourced by bench/iostat.sh and link/profile.sh: fake block devices for
# iostat to read.
#
# make_devices N PROC_DIR BLOCK_DIR
#   Writes N devices (nvme<i>n1, 20-field lines, counters from a fixed seed)
#   to PROC_DIR/diskstats and BLOCK_DIR/<dev>/stat with the same counters,
#   plus PROC_DIR/uptime and PROC_DIR/stat with one line per CPU of this
#   machine. Existing files are truncated in place (their inodes kept, so
#   bind mounts over /proc stay in place); BLOCK_DIR is emptied first.
make_devices() {
    local n=$1 proc=$2 block=$3 cpus c
    cpus=$(ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l)
    find "$block" -mindepth 1 -delete
    seq 0 $((n - 1)) | sed "s|^|$block/nvme|; s|\$|n1|" | xargs mkdir
    awk -v n="$n" -v proc="$proc" -v block="$block" 'BEGIN {
        srand(42)
        for (i = 0; i < n; i++) {
            rd = int(rand() * 1e7) + 1; wr = int(rand() * 1e7)
            split(rd " " int(rd/3) " " rd*8 " " int(rand()*2e9) " " \
                  wr " " int(wr/2) " " wr*16 " " int(rand()*2e9) " " \
                  int(rand()*4) " " int(rand()*2e9) " " int(rand()*2e9) " " \
                  int(rand()*1e5) " 0 " int(rand()*1e8) " " int(rand()*1e6) " " \
                  int(rand()*1e5) " " int(rand()*1e6), v, " ")
            line = ""; sys = ""
            for (k = 1; k <= 17; k++) { line = line " " v[k]; sys = sys sprintf("%s%8d", k > 1 ? " " : "", v[k]) }
            printf "%4d %7d nvme%dn1%s\n", 259, i, i, line > (proc "/diskstats")
            f = block "/nvme" i "n1/stat"
            print sys > f
            close(f)
        }
    }'
    echo "123456.78 234567.89" >"$proc/uptime"
    {
        echo "cpu  4705 150 1120 16250 520 0 30 0 0 0"
        for c in $(seq 0 $((cpus - 1))); do echo "cpu$c 2352 75 560 8125 260 0 15 0 0 0"; done
        echo "intr 0"; echo "ctxt 1000"; echo "btime 1591000000"; echo "processes 100"
    } >"$proc/stat"
}
