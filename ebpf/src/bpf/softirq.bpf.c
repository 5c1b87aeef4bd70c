// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Time each core spends in each softirq vector, as bcc's softirqs tool
 * measures it: the time between the irq:softirq_entry and
 * irq:softirq_exit tracepoints, added per core (a per-CPU array) and per
 * vector (NET_TX is 2, NET_RX 3). Raw tracepoints: attached by name,
 * without tracefs mounted. Softirqs do not nest on one core (a softirq
 * runs with softirqs off), so one start time per core is enough; a hard
 * irq inside a softirq is counted in it, as bcc counts it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define NR_SOFTIRQS 10

/* When the current softirq on this core began, ns (0: none). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} start SEC(".maps");

/* Per core, per vector: ns spent, and how many times it ran. */
struct softirq_time {
	__u64 ns;
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_SOFTIRQS);
	__type(key, __u32);
	__type(value, struct softirq_time);
} softirq_time SEC(".maps");

SEC("raw_tp/softirq_entry")
int linerate_softirq_entry(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	__u64 *t = bpf_map_lookup_elem(&start, &zero);

	if (t)
		*t = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/softirq_exit")
int linerate_softirq_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	__u32 vec = (__u32)ctx->args[0];
	__u64 *t = bpf_map_lookup_elem(&start, &zero);
	struct softirq_time *v;

	if (!t || !*t || vec >= NR_SOFTIRQS)
		return 0;
	v = bpf_map_lookup_elem(&softirq_time, &vec);
	if (v) {
		v->ns += bpf_ktime_get_ns() - *t;
		v->count += 1;
	}
	*t = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
