// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * linerate's XDP steering program.
 *
 * Frames whose UDP destination port lies in the configured range are
 * redirected to the AF_XDP socket registered for the receive queue
 * they arrived on; everything else (ARP, SSH, the control connection,
 * any other traffic) passes to the kernel untouched. Declared
 * frags-aware so it attaches to a veth at MTU 9000; the headers it
 * parses always lie in the first buffer.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define MAX_QUEUES 64

/* Keep in step with `STATS_FIELDS` in ebpf/src/stats.rs (a test compares
 * them through this object's BTF: ebpf/src/layout.rs). */
struct steer_stats {
	__u64 seen;
	__u64 redirected;
	__u64 redirect_failed;
	__u64 passed;
	__u64 malformed;
	__u64 responded;
	__u64 dropped;
	__u64 counted; /* test frames counted and dropped here (count-only) */
	__u64 foreign; /* frames on the test ports without our header (count-only) */
};

/* Keep in step with `CONFIG_LAYOUT` in ebpf/src/program.rs (checked
 * through this object's BTF: ebpf/src/layout.rs). */
struct steer_config {
	__u16 port_lo; /* host byte order, inclusive */
	__u16 port_hi; /* host byte order, inclusive */
	__u32 enabled;
	__u32 respond; /* answer single-frame requests with XDP_TX */
	__u32 drop_ppm; /* drop this many test frames per million (fault injection) */
	__u32 count_only; /* count test frames per flow and drop them: the XDP-only receiver */
};

/* The linerate header (datapath/src/header.rs), as far as the responder
 * reads it; tests/layout.rs checks these against the Rust constants. */
#define LR_MAGIC 0x4c52
#define LR_VERSION 1
#define LR_KIND_REQUEST 2
#define LR_KIND_RESPONSE 3
#define LR_HEADER_LEN 34 /* base 18 + fragment 16 */
#define LR_COUNT_OFFSET 26
#define LR_BASE_LEN 18
#define LR_FLOW_OFFSET 4
#define LR_SEQ_OFFSET 6
#define MAX_FLOWS 4096
#define SEQ_WINDOW 64 /* as datapath/src/sequence.rs */

/* One flow's accounting in the XDP-only receiver: the same rules as
 * `SequenceTracker` in datapath/src/sequence.rs (a gap counts as lost, a
 * late frame within 64 of the newest closes one lost slot and counts as
 * reordered, one seen before counts as a duplicate). A flow's frames come
 * through one receive queue, whose NAPI runs on one CPU at a time, so the
 * entry is never updated by two CPUs at once. Keep in step with
 * `RX_FLOW_LAYOUT` in ebpf/src/program.rs (checked through BTF). */
struct rx_flow {
	__u64 next;	/* next sequence number expected */
	__u64 seen;	/* bit i: sequence next - 1 - i received */
	__u64 received; /* frames, duplicates included */
	__u64 lost;
	__u64 reordered;
	__u64 duplicates;
	__u64 bytes; /* frame bytes without FCS, every buffer */
};

struct vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct steer_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct steer_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FLOWS);
	__type(key, __u32);
	__type(value, struct rx_flow);
} rx_flows SEC(".maps");

static __always_inline int pass(struct steer_stats *s)
{
	s->passed++;
	return XDP_PASS;
}

static __always_inline int malformed(struct steer_stats *s)
{
	s->malformed++;
	return pass(s);
}

static __always_inline __u64 get48(__u8 *p)
{
	return (__u64)p[0] << 40 | (__u64)p[1] << 32 | (__u64)p[2] << 24 |
	       (__u64)p[3] << 16 | (__u64)p[4] << 8 | (__u64)p[5];
}

/* The XDP-only receiver: accounts a test frame to its flow and drops it,
 * with no copy to user space. */
static __always_inline int count_frame(struct xdp_md *ctx, struct steer_stats *s, __u8 *lr,
				       void *end)
{
	if ((void *)(lr + LR_BASE_LEN) > end || lr[0] != (LR_MAGIC >> 8) ||
	    lr[1] != (LR_MAGIC & 0xff) || lr[2] != LR_VERSION) {
		s->foreign++;
		return XDP_DROP;
	}
	__u32 flow = (__u32)lr[LR_FLOW_OFFSET] << 8 | lr[LR_FLOW_OFFSET + 1];
	__u64 seq = get48(lr + LR_SEQ_OFFSET);
	struct rx_flow *f = bpf_map_lookup_elem(&rx_flows, &flow);

	if (!f) {
		s->foreign++;
		return XDP_DROP;
	}
	f->received++;
	f->bytes += bpf_xdp_get_buff_len(ctx);
	s->counted++;
	if (seq >= f->next) {
		__u64 gap = seq - f->next;

		f->lost += gap;
		f->seen = gap + 1 >= 64 ? 1 : (f->seen << (gap + 1)) | 1;
		f->next = seq + 1;
		return XDP_DROP;
	}
	__u64 behind = f->next - 1 - seq;

	if (behind >= SEQ_WINDOW) {
		f->reordered++;
		if (f->lost)
			f->lost--;
		return XDP_DROP;
	}
	__u64 bit = 1ULL << behind;

	if (f->seen & bit) {
		f->duplicates++;
	} else {
		f->seen |= bit;
		f->reordered++;
		if (f->lost)
			f->lost--;
	}
	return XDP_DROP;
}

/* Swaps the frame's MAC addresses and UDP ports: a request's become its
 * response's. */
static __always_inline void swap_macs_and_ports(struct ethhdr *eth, struct udphdr *udp)
{
	__u8 mac[ETH_ALEN];
	__be16 port;

	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
}

/* Turns a single-frame request into its response in place: addresses and
 * ports swapped, kind set to response, and sends it back out (XDP_TX).
 * Swapping addresses leaves the IPv4 checksum as it was; the UDP checksum
 * is cleared (allowed over IPv4). */
static __always_inline int respond_ipv4(struct steer_stats *s, struct ethhdr *eth,
					struct iphdr *ip, struct udphdr *udp, __u8 *lr)
{
	__be32 addr;

	swap_macs_and_ports(eth, udp);
	addr = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = addr;
	udp->check = 0;
	lr[3] = LR_KIND_RESPONSE;
	s->responded++;
	return XDP_TX;
}

/* The same over IPv6, whose UDP checksum is never zero: swapping the
 * addresses and the ports leaves it as it was (the sums are the same), and
 * the kind's change (request 2 -> response 3 in the word that holds the
 * header's version and kind) is added to it (RFC 1624). */
static __always_inline int respond_ipv6(struct steer_stats *s, struct ethhdr *eth,
					struct ipv6hdr *ip, struct udphdr *udp, __u8 *lr)
{
	struct in6_addr addr;
	__u32 sum;

	swap_macs_and_ports(eth, udp);
	addr = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = addr;
	/* HC' = ~(~HC + ~m + m'), m and m' the word (version << 8 | kind). */
	sum = (__u16)~bpf_ntohs(udp->check);
	sum += (__u16)~(LR_VERSION << 8 | LR_KIND_REQUEST);
	sum += LR_VERSION << 8 | LR_KIND_RESPONSE;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (__u16)~sum;
	udp->check = bpf_htons(sum ? sum : 0xffff);
	lr[3] = LR_KIND_RESPONSE;
	s->responded++;
	return XDP_TX;
}

SEC("xdp.frags")
int linerate_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct steer_stats *s = bpf_map_lookup_elem(&stats, &zero);
	struct steer_config *cfg = bpf_map_lookup_elem(&config, &zero);
	struct ethhdr *eth = data;
	void *cur;
	struct iphdr *ip4 = 0;
	struct ipv6hdr *ip6 = 0;
	int ipver = 0; /* 4 or 6: a number, so the verifier never sees pointers or'd */
	__u16 proto;
	__u8 l4;

	if (!s || !cfg)
		return XDP_PASS;
	s->seen++;
	if (!cfg->enabled)
		return pass(s);

	if ((void *)(eth + 1) > end)
		return malformed(s);
	proto = eth->h_proto;
	cur = eth + 1;

	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *vlan = cur;

		if ((void *)(vlan + 1) > end)
			return malformed(s);
		proto = vlan->encap_proto;
		cur = vlan + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = cur;

		if ((void *)(ip + 1) > end)
			return malformed(s);
		if (ip->ihl < 5)
			return malformed(s);
		/* A later IP fragment carries no UDP header: the kernel's. */
		if (ip->frag_off & bpf_htons(0x1fff))
			return pass(s);
		l4 = ip->protocol;
		ip4 = ip;
		ipver = 4;
		cur = (void *)ip + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = cur;
		if ((void *)(ip6 + 1) > end)
			return malformed(s);
		l4 = ip6->nexthdr;
		cur = ip6 + 1;
		ipver = 6;
	} else {
		return pass(s);
	}

	if (l4 != IPPROTO_UDP)
		return pass(s);

	struct udphdr *udp = cur;

	if ((void *)(udp + 1) > end)
		return malformed(s);

	__u16 dport = bpf_ntohs(udp->dest);

	if (dport < cfg->port_lo || dport > cfg->port_hi)
		return pass(s);

	if (cfg->drop_ppm && bpf_get_prandom_u32() % 1000000 < cfg->drop_ppm) {
		s->dropped++;
		return XDP_DROP;
	}

	if (cfg->count_only)
		return count_frame(ctx, s, (void *)(udp + 1), end);

	if (cfg->respond && ipver) {
		__u8 *lr = (void *)(udp + 1);

		if ((void *)(lr + LR_HEADER_LEN) <= end &&
		    lr[0] == (LR_MAGIC >> 8) && lr[1] == (LR_MAGIC & 0xff) &&
		    lr[2] == LR_VERSION && lr[3] == LR_KIND_REQUEST &&
		    lr[LR_COUNT_OFFSET] == 0 && lr[LR_COUNT_OFFSET + 1] == 0 &&
		    lr[LR_COUNT_OFFSET + 2] == 0 && lr[LR_COUNT_OFFSET + 3] == 1)
		{
			if (ipver == 4 && ip4)
				return respond_ipv4(s, eth, ip4, udp, lr);
			if (ipver == 6 && ip6)
				return respond_ipv6(s, eth, ip6, udp, lr);
		}
	}

	int action = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);

	if (action == XDP_REDIRECT)
		s->redirected++;
	else
		s->redirect_failed++;
	return action;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
