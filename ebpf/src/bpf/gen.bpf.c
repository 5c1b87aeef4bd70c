// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * linerate's in-kernel frame generator.
 *
 * Run by BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES: the kernel hands
 * this program the template frame (built by datapath/src/frame.rs) once
 * per repetition, in a page of its own page pool, and transmits whatever
 * the program redirects as an xdp_frame through the target's
 * ndo_xdp_xmit: no skb, no copy. The program stamps each frame with its
 * flow's next sequence number and the send time (and, for messages, the
 * fragment header and the fragment's lengths), then redirects it to the
 * sending interface.
 *
 * The kernel initialises a page's data from the template only when the
 * page is first allocated, so every field that differs between frames is
 * written on every run.
 *
 * Pacing and counts live here too, because one BPF_PROG_RUN call costs
 * two RCU grace periods (~27 ms on kernel 6.18) and so cannot be made
 * short: a call runs many repetitions, and a repetition whose frame is not
 * due yet (or past the flow's count) is dropped before it is stamped
 * (XDP_DROP recycles the page at once) and counted as skipped.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define MAX_FLOWS 4096
#define MIN_LEN 60 /* the smallest frame without FCS */
#define MAX_MIX 64 /* frames in a size pattern (datapath/src/mix.rs) */

/* The linerate header (datapath/src/header.rs); tests/layout.rs checks
 * these against the Rust constants. */
#define LR_OFFSET 42 /* Ethernet + IPv4 + UDP */
#define LR_FLOW_OFFSET 4
#define LR_SEQ_OFFSET 6
#define LR_TIME_OFFSET 12
#define LR_BASE_LEN 18
#define LR_FRAGMENT_LEN 16

/* Keep in step with `GEN_CONFIG_LAYOUT` in ebpf/src/generator.rs
 * (checked through this object's BTF: ebpf/src/layout.rs). */
struct gen_config {
	__u32 ifindex;	    /* where frames go: the sending interface */
	__u32 msg_len;	    /* bytes per message */
	__u32 frag_count;   /* fragments per message; 0: plain stream frames */
	__u32 per_fragment; /* message bytes in a full fragment */
	__u64 count;	    /* frames per flow, then skip; 0: no limit */
	__u64 interval_fp;  /* ns between a flow's frames, x256; 0: unpaced */
	__u64 burst;	    /* frames a late flow may catch up at once */
	__u64 epoch_ns;	    /* pacing counts time from here (CLOCK_MONOTONIC) */
	__u64 window;	    /* frames a flow may have unacknowledged in
			     * gen_credit; 0: no acknowledgements */
	__u32 mix_count;    /* frames in `mix`; 0: every frame the template's size */
	__u16 mix[MAX_MIX]; /* frame i's length (without FCS): mix[i % mix_count] */
};

/* Keep in step with `GEN_FLOW_LAYOUT` in ebpf/src/generator.rs. One
 * generator thread owns a flow, so its entry is never written by two CPUs
 * at once. */
struct gen_flow {
	__u64 seq;	       /* next frame sequence number */
	__u64 redirected;      /* frames handed to the interface */
	__u64 redirect_failed; /* frames the redirect refused */
	__u32 msg_id;	       /* message being sent */
	__u32 frag_index;      /* its next fragment */
	__u64 next_due_fp;     /* when the next frame is due, ns x256 */
	__u64 skipped;	       /* repetitions not sent: not due, or past count */
	__u64 bytes;	       /* bytes (without FCS) of the redirected frames */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_config);
} gen_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FLOWS);
	__type(key, __u32);
	__type(value, struct gen_flow);
} gen_flows SEC(".maps");

/* Acknowledgements: per flow, the frames its receivers took off their
 * rings (or that the sender gave up as lost). The receivers are AF_XDP
 * sockets of the same process, which add to their flows' entries through
 * a shared mapping of this map (datapath/src/xsk/credit.rs), with no
 * system call. A flow with `window` frames unacknowledged waits: the
 * generator's backpressure, when both ends run on this host (veth has
 * none: a full peer ring drops what it is handed). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FLOWS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} gen_credit SEC(".maps");

static __always_inline void put48(__u8 *p, __u64 v)
{
	p[0] = v >> 40;
	p[1] = v >> 32;
	p[2] = v >> 24;
	p[3] = v >> 16;
	p[4] = v >> 8;
	p[5] = v;
}

static __always_inline void put32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* IPv4 header checksum over 20 bytes (no options in our frames). */
static __always_inline __u16 ipv4_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;

	ip->check = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* Sets the frame's length to `len` from whatever it is now: live-frames
 * mode resets a frame's pointers only when the program moved `data` (or
 * changed the frame's flags), not `data_end` (net/bpf/test_run.c
 * reset_ctx), so a frame shrunk in one repetition may come back shrunk in
 * the next and must grow again. */
static __always_inline int set_len(struct xdp_md *ctx, __u32 len)
{
	int have = (int)(ctx->data_end - ctx->data);

	if ((int)len == have)
		return 0;
	return bpf_xdp_adjust_tail(ctx, (int)len - have);
}

/* Writes the IPv4 and UDP length fields of a datagram of `len` frame
 * bytes (without padding), and the IPv4 header checksum. */
static __always_inline int set_ip_lengths(struct xdp_md *ctx, __u32 len)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(ip + 1);

	if ((void *)(udp + 1) > end)
		return -1;
	ip->tot_len = bpf_htons(len - sizeof(struct ethhdr));
	ip->check = ipv4_csum(ip);
	udp->len = bpf_htons(len - sizeof(struct ethhdr) - sizeof(struct iphdr));
	udp->check = 0;
	return 0;
}

SEC("xdp")
int linerate_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct gen_config *cfg = bpf_map_lookup_elem(&gen_config, &zero);
	__u8 *lr = data + LR_OFFSET;

	if (!cfg)
		return XDP_ABORTED;
	if ((void *)(lr + LR_BASE_LEN + LR_FRAGMENT_LEN) > end &&
	    (cfg->frag_count || (void *)(lr + LR_BASE_LEN) > end))
		return XDP_ABORTED;

	__u32 flow = (__u32)lr[LR_FLOW_OFFSET] << 8 | lr[LR_FLOW_OFFSET + 1];
	struct gen_flow *f = bpf_map_lookup_elem(&gen_flows, &flow);

	if (!f)
		return XDP_ABORTED;
	if (cfg->count && f->seq >= cfg->count) {
		f->skipped++;
		return XDP_DROP;
	}
	if (cfg->window) {
		/* Backpressure: wait while the window is full. */
		__u64 *acked = bpf_map_lookup_elem(&gen_credit, &flow);

		if (!acked)
			return XDP_ABORTED;
		if ((__s64)(f->redirected - *(volatile __u64 *)acked) >=
		    (__s64)cfg->window) {
			f->skipped++;
			return XDP_DROP;
		}
	}

	__u64 now = bpf_ktime_get_ns();

	if (cfg->interval_fp) {
		/* A token bucket: the next frame is due one interval after the
		 * last, and a flow that fell behind (a descheduled thread, the
		 * gap between calls) catches up at most `burst` frames. */
		__u64 now_fp = (now - cfg->epoch_ns) << 8;
		__u64 floor = cfg->burst * cfg->interval_fp;
		__u64 due = f->next_due_fp;

		if (!due) /* the first frame: an empty bucket */
			due = now_fp;
		floor = now_fp > floor ? now_fp - floor : 0;
		if (due < floor)
			due = floor;
		if (now_fp < due) {
			f->skipped++;
			return XDP_DROP;
		}
		f->next_due_fp = due + cfg->interval_fp;
	}

	__u64 seq = f->seq;

	put48(lr + LR_SEQ_OFFSET, seq);
	put48(lr + LR_TIME_OFFSET, now);
	f->seq = seq + 1;

	if (cfg->frag_count) {
		__u8 *frag = lr + LR_BASE_LEN;
		__u32 index = f->frag_index;
		__u32 piece = cfg->per_fragment;

		if ((void *)(frag + LR_FRAGMENT_LEN) > end)
			return XDP_ABORTED;
		put32(frag, f->msg_id);
		put32(frag + 4, index);
		put32(frag + 8, cfg->frag_count);
		put32(frag + 12, cfg->msg_len);
		if (index + 1 == cfg->frag_count) {
			/* The last fragment carries what is left. */
			__u32 before = index * cfg->per_fragment;

			piece = cfg->msg_len > before ? cfg->msg_len - before : 0;
			f->frag_index = 0;
			f->msg_id++;
		} else {
			f->frag_index = index + 1;
		}
		if (piece > cfg->per_fragment)
			piece = cfg->per_fragment;

		/* The lengths of this fragment: IP and UDP length fields, and
		 * the frame's own (padded to the minimum). */
		__u32 len = LR_OFFSET + LR_BASE_LEN + LR_FRAGMENT_LEN + piece;

		if (set_ip_lengths(ctx, len))
			return XDP_ABORTED;
		if (len < MIN_LEN)
			len = MIN_LEN;
		if (set_len(ctx, len))
			return XDP_ABORTED;
	} else if (cfg->mix_count) {
		/* A traffic mix: this frame's size from the pattern, by its
		 * sequence number (the template is the largest size). */
		__u32 i = (seq % cfg->mix_count) & (MAX_MIX - 1);
		__u32 len = cfg->mix[i];

		if (len < MIN_LEN)
			return XDP_ABORTED;
		if (set_len(ctx, len) || set_ip_lengths(ctx, len))
			return XDP_ABORTED;
	}

	int action = bpf_redirect(cfg->ifindex, 0);

	if (action == XDP_REDIRECT) {
		f->redirected++;
		f->bytes += ctx->data_end - ctx->data;
	} else {
		f->redirect_failed++;
	}
	return action;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
