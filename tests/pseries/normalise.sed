# What legitimately differs between two runs of tests/pseries/vcpustat.sh
# (on the real kernel in QEMU and on the FUSE simulation, or two real runs):
# wall-clock times, which vcpustat prints in ISO 8601 (JSON, CSV) and as
# Prometheus sample timestamps (milliseconds since the epoch). Nothing else
# is rewritten: the counters are compared as printed (under QEMU's TCG no
# dispatch is logged, so they are 0 on both sides).
s/[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\(\.[0-9]*\)\{0,1\}Z/<time>/g
s/^\(vcpustat_[a-z_]*\({[^}]*}\)\{0,1\} [^ ]*\) [0-9]\{13\}$/\1 <time>/
