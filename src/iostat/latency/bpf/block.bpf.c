// SPDX-License-Identifier: GPL-2.0-only
//
// iostat-rs --latency: forwards the block tracepoints iostat-rs's tracker
// needs (block_rq_issue, block_rq_complete, block_rq_requeue) into the perf
// ring of the CPU they fire on, 32 bytes an event. Loaded by aya
// (src/iostat/latency/forward.rs), which sets the globals below before
// loading; iostat-rs puts its rings in EVENTS.
//
// The compiled object beside this file is what iostat-rs embeds, so a build
// needs no BPF compiler; `bash src/iostat/latency/bpf/build.sh` makes it
// again and `.ci/run` checks that it matches this source.
//
// No kernel or libbpf header: the few constants are those of
// include/uapi/linux/bpf.h, named as there.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define SEC(name) __attribute__((section(name), used))
#define INLINE static inline __attribute__((always_inline))

// enum bpf_map_type
#define BPF_MAP_TYPE_PERF_EVENT_ARRAY 4
// bpf_perf_event_output: the slot of the CPU the program runs on
#define BPF_F_CURRENT_CPU 0xffffffffULL

// enum bpf_func_id
static u64 (*ktime_get_ns)(void) = (void *)5;
static long (*perf_event_output)(void *ctx, void *map, u64 flags, void *data, u64 size) =
	(void *)25;
static long (*probe_read_kernel)(void *dst, u32 size, const void *src) = (void *)113;

// A map in the legacy `maps` section: type, key size, value size, entries,
// flags.
struct map_def {
	u32 type;
	u32 key_size;
	u32 value_size;
	u32 max_entries;
	u32 flags;
};

// Per CPU number, the perf event whose ring takes that CPU's events (the
// number of slots is set at load time).
struct map_def EVENTS SEC("maps") = { BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 1, 0 };

// The tracepoints, in the order of the kinds iostat-rs decodes.
#define ISSUE 0
#define COMPLETE 1
#define REQUEUE 2

// Where the fields are in each tracepoint's record, from tracefs' format
// files: FIELD_AT[kind] = { dev, sector, nr_sector, rwbs }. iostat-rs
// checks that each lies within SPAN and is aligned to its size.
#define DEV 0
#define SECTOR 1
#define NR_SECTOR 2
#define RWBS 3
const volatile u32 FIELD_AT[3][4] = {};

// The part of a record copied to read the fields from.
#define SPAN 48

// What iostat-rs reads (collector.rs: decode_forwarded).
struct record {
	u64 time;
	u64 sector;
	u32 dev;
	u32 nr_sector;
	u8 rwbs[2];
	u16 zero;
	u32 kind;
};

// Each program returns 1: a tracepoint's eBPF program that returns 0 tells
// perf to drop the event for every perf event on that tracepoint, so
// `perf record -e block:block_rq_issue` (or another iostat-rs sampling
// with CAP_PERFMON alone) would see nothing while iostat-rs runs. Passing
// the event on costs nothing here: the perf event iostat-rs attaches
// through counts without sampling, on one CPU.
INLINE int forward(void *ctx, u32 kind)
{
	u64 copy[SPAN / 8];
	const u8 *raw = (const u8 *)copy;
	struct record r;

	// The offsets are the verifier's constants (FIELD_AT is read-only),
	// but a tracepoint's record can only be read at offsets fixed in the
	// instructions: so it is copied to the stack first.
	if (probe_read_kernel(copy, sizeof(copy), ctx) != 0)
		return 1;
	r.time = ktime_get_ns();
	r.sector = *(const u64 *)(raw + FIELD_AT[kind][SECTOR]);
	r.dev = *(const u32 *)(raw + FIELD_AT[kind][DEV]);
	r.nr_sector = *(const u32 *)(raw + FIELD_AT[kind][NR_SECTOR]);
	r.rwbs[0] = raw[FIELD_AT[kind][RWBS]];
	r.rwbs[1] = raw[FIELD_AT[kind][RWBS] + 1];
	r.zero = 0;
	r.kind = kind;
	perf_event_output(ctx, &EVENTS, BPF_F_CURRENT_CPU, &r, sizeof(r));
	return 1;
}

SEC("tracepoint/block/block_rq_issue")
int issue(void *ctx)
{
	return forward(ctx, ISSUE);
}

SEC("tracepoint/block/block_rq_complete")
int complete(void *ctx)
{
	return forward(ctx, COMPLETE);
}

SEC("tracepoint/block/block_rq_requeue")
int requeue(void *ctx)
{
	return forward(ctx, REQUEUE);
}

// bpf_probe_read_kernel is for GPL-compatible programs.
char LICENSE[] SEC("license") = "GPL";
