/* bench/fwd_sink.bpf.c: the forwarding benchmark's receiver: counts every frame (and its bytes) that
 * reaches the interface and drops it, so the receiving namespace's kernel costs nothing. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} sink_count SEC(".maps");

SEC("xdp")
int fwd_sink(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&sink_count, &k);

	if (v)
		*v += 1;
	k = 1;
	v = bpf_map_lookup_elem(&sink_count, &k);
	if (v)
		*v += (__u64)(ctx->data_end - ctx->data);
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
