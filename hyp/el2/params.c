// SPDX-License-Identifier: MIT
/*
 * Boot parameters: space-separated key=value words in /chosen/bootargs
 * (QEMU's -append).  Unknown keys and bad values are reported and ignored.
 *
 *   mode=consume|overwrite   ring mode (default: the configured mode)
 *   cpus=N                   CPUs to bring up, 1..CONFIG_HVT_HYP_NR_CPUS
 *   hcalls=N                 hypercalls per CPU; 0 = until told to stop
 *   subbufs=N                sub-buffers per CPU (power of two, 0 = fill)
 *   hold=0|1                 after the payload, stay up until 'q'
 *   wait=MS                  before the payload, wait up to MS ms for the
 *                            host to attach (control page magic)
 *   delay=N                  payload spin loops between hypercalls
 *   bench=N                  run the writer benchmark (N events), then
 *                            power off
 */
#include "hyp.h"

static int parse_u64(const char *s, uint32_t n, uint64_t *out)
{
	uint64_t v = 0;
	uint32_t i;

	if (!n)
		return -HVT_EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -HVT_EINVAL;
		if (v > (~0ULL - 9) / 10)
			return -HVT_ERANGE;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

static int word_is(const char *s, uint32_t n, const char *w)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!w[i] || s[i] != w[i])
			return 0;
	return w[n] == 0;
}

static int params_one(struct hyp_params *p, const char *k, uint32_t kn,
		      const char *v, uint32_t vn)
{
	uint64_t n = 0;

	if (word_is(k, kn, "mode")) {
		if (word_is(v, vn, "consume"))
			p->mode = HVT_MODE_CONSUME;
		else if (word_is(v, vn, "overwrite"))
			p->mode = HVT_MODE_OVERWRITE;
		else
			return -HVT_EINVAL;
		return 0;
	}
	if (parse_u64(v, vn, &n))
		return -HVT_EINVAL;
	if (word_is(k, kn, "cpus")) {
		if (n < 1 || n > HYP_NR_CPUS)
			return -HVT_ERANGE;
		p->nr_cpus = (uint32_t)n;
	} else if (word_is(k, kn, "hcalls")) {
		p->hcalls = n;
	} else if (word_is(k, kn, "subbufs")) {
		if (n && (n < HVT_ABI_MIN_SUBBUFS || n > HVT_ABI_MAX_SUBBUFS ||
			  (n & (n - 1))))
			return -HVT_ERANGE;
		p->subbufs = (uint32_t)n;
	} else if (word_is(k, kn, "hold")) {
		p->hold = n != 0;
	} else if (word_is(k, kn, "wait")) {
		if (n > 600000)
			return -HVT_ERANGE;
		p->wait_ms = (uint32_t)n;
	} else if (word_is(k, kn, "delay")) {
		p->delay = n;
	} else if (word_is(k, kn, "bench")) {
		p->bench = n;
	} else {
		return -HVT_ENOENT;
	}
	return 0;
}

int params_parse(struct hyp_params *p, const char *args)
{
	const char *s = args;
	int bad = 0;

	while (s && *s) {
		const char *w, *eq = NULL;
		uint32_t n = 0, kn;
		int ret;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		w = s;
		while (w[n] && w[n] != ' ' && w[n] != '\t') {
			if (w[n] == '=' && !eq)
				eq = w + n;
			n++;
		}
		s = w + n;
		if (!eq || eq == w) {
			eq = NULL;
			ret = -HVT_EINVAL;
		} else {
			kn = (uint32_t)(eq - w);
			ret = params_one(p, w, kn, eq + 1, n - kn - 1);
		}
		if (ret) {
			char word[64];
			uint32_t i;

			for (i = 0; i < n && i < sizeof(word) - 1; i++)
				word[i] = w[i];
			word[i] = 0;
			hyp_printf("hyp: ignoring boot parameter '%s': %s\n",
				   word,
				   !eq ? "expected key=value" :
				   ret == -HVT_ENOENT ? "unknown key" :
				   ret == -HVT_ERANGE ? "value out of range" :
							"bad value");
			bad++;
		}
	}
	return bad;
}
