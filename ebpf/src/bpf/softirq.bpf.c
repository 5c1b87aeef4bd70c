// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Time each core spends in each softirq vector, as bcc's softirqs tool
 * measures it: the time between the irq:softirq_entry and
 * irq:softirq_exit tracepoints, added per core (a per-CPU array) and per
 * vector (NET_TX is 2, NET_RX 3). Raw tracepoints: attached by name,
 * without tracefs mounted. Softirqs do not nest on one core (a softirq
 * runs with softirqs off), so one start time per core is enough; a hard
 * irq inside a softirq is counted in it, as bcc counts it.
 *
 * A softirq also runs in the context of whatever task enabled bottom
 * halves (a sender's system call, linerate's generator) and, on kernels
 * without CONFIG_IRQ_TIME_ACCOUNTING, its time is then charged to that
 * task's run time too. So each vector's time is also counted apart when
 * the task it interrupted belongs to the process `owner` names (its
 * tgid; 0: none): that part is already in the process's threads.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define NR_SOFTIRQS 10

/* When the current softirq on this core began, ns (0: none), and
 * whether it interrupted a task of the owner. */
struct softirq_start {
	__u64 ns;
	__u64 owner;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct softirq_start);
} start SEC(".maps");

/* The tgid whose tasks' softirq time is counted apart (0: none). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} owner SEC(".maps");

/* Per core, per vector: ns spent, how many times it ran, and the ns of
 * it spent in a task of the owner. */
struct softirq_time {
	__u64 ns;
	__u64 count;
	__u64 owner_ns;
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
	struct softirq_start *t = bpf_map_lookup_elem(&start, &zero);
	__u32 *own = bpf_map_lookup_elem(&owner, &zero);

	if (!t)
		return 0;
	t->ns = bpf_ktime_get_ns();
	t->owner = own && *own && (bpf_get_current_pid_tgid() >> 32) == *own;
	return 0;
}

SEC("raw_tp/softirq_exit")
int linerate_softirq_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	__u32 vec = (__u32)ctx->args[0];
	struct softirq_start *t = bpf_map_lookup_elem(&start, &zero);
	struct softirq_time *v;
	__u64 ns;

	if (!t || !t->ns || vec >= NR_SOFTIRQS)
		return 0;
	v = bpf_map_lookup_elem(&softirq_time, &vec);
	if (v) {
		ns = bpf_ktime_get_ns() - t->ns;
		v->ns += ns;
		v->count += 1;
		if (t->owner)
			v->owner_ns += ns;
	}
	t->ns = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
