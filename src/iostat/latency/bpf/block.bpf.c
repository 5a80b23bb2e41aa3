// SPDX-License-Identifier: GPL-2.0-only
//
// iostat-rs --latency: forwards the block tracepoints iostat-rs's tracker
// needs (block_rq_issue, block_rq_complete, block_rq_requeue) into one BPF
// ring buffer, 32 bytes an event. Loaded by aya (src/iostat/latency/
// collector.rs), which sets the globals below before loading.
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
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_RINGBUF 27
// bpf_ringbuf_submit flags, bpf_ringbuf_query flags
#define BPF_RB_NO_WAKEUP 1
#define BPF_RB_FORCE_WAKEUP 2
#define BPF_RB_AVAIL_DATA 0

// enum bpf_func_id
static void *(*map_lookup_elem)(void *map, const void *key) = (void *)1;
static u64 (*ktime_get_ns)(void) = (void *)5;
static long (*probe_read_kernel)(void *dst, u32 size, const void *src) = (void *)113;
static void *(*ringbuf_reserve)(void *ringbuf, u64 size, u64 flags) = (void *)131;
static void (*ringbuf_submit)(void *data, u64 flags) = (void *)132;
static u64 (*ringbuf_query)(void *ringbuf, u64 flags) = (void *)134;

// A map in the legacy `maps` section: type, key size, value size, entries,
// flags.
struct map_def {
	u32 type;
	u32 key_size;
	u32 value_size;
	u32 max_entries;
	u32 flags;
};

// The events; its size is set at load time (a power of two of pages).
struct map_def EVENTS SEC("maps") = { BPF_MAP_TYPE_RINGBUF, 0, 0, 1 << 22, 0 };
// Events dropped because the ring was full.
struct map_def LOST SEC("maps") = { BPF_MAP_TYPE_ARRAY, 4, 8, 1, 0 };

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
// Wake the reader when this many bytes wait in the ring.
const volatile u64 WAKE_AT = 0;

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

INLINE int forward(void *ctx, u32 kind)
{
	u64 copy[SPAN / 8];
	const u8 *raw = (const u8 *)copy;
	struct record *r;

	if (probe_read_kernel(copy, sizeof(copy), ctx) != 0)
		return 0;
	r = ringbuf_reserve(&EVENTS, sizeof(*r), 0);
	if (!r) {
		u32 first = 0;
		u64 *lost = map_lookup_elem(&LOST, &first);

		if (lost)
			__sync_fetch_and_add(lost, 1);
		return 0;
	}
	r->time = ktime_get_ns();
	r->sector = *(const u64 *)(raw + FIELD_AT[kind][SECTOR]);
	r->dev = *(const u32 *)(raw + FIELD_AT[kind][DEV]);
	r->nr_sector = *(const u32 *)(raw + FIELD_AT[kind][NR_SECTOR]);
	r->rwbs[0] = raw[FIELD_AT[kind][RWBS]];
	r->rwbs[1] = raw[FIELD_AT[kind][RWBS] + 1];
	r->zero = 0;
	r->kind = kind;
	ringbuf_submit(r, ringbuf_query(&EVENTS, BPF_RB_AVAIL_DATA) >= WAKE_AT ?
				  BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
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
