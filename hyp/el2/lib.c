// SPDX-License-Identifier: MIT
/*
 * The few C library pieces the EL2 image needs (there is no libc at EL2):
 * the mem*() functions the compiler may call for struct copies, and a
 * small snprintf for console messages (%d %u %x %s %c %p with l/ll/z
 * length modifiers, width and zero padding).
 */
#include "hyp.h"

void *memset(void *s, int c, size_t n)
{
	uint8_t *p = s;

	while (n--)
		*p++ = (uint8_t)c;
	return s;
}

void *memcpy(void *d, const void *s, size_t n)
{
	uint8_t *dp = d;
	const uint8_t *sp = s;

	while (n--)
		*dp++ = *sp++;
	return d;
}

void *memmove(void *d, const void *s, size_t n)
{
	uint8_t *dp = d;
	const uint8_t *sp = s;

	if (dp < sp || dp >= sp + n)
		return memcpy(d, s, n);
	while (n--)
		dp[n] = sp[n];
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

struct out {
	char *buf;
	size_t len, pos;
};

static void out_c(struct out *o, char c)
{
	if (o->pos + 1 < o->len)
		o->buf[o->pos] = c;
	o->pos++;
}

static void out_num(struct out *o, uint64_t v, unsigned int base, int neg,
		    unsigned int width, char padc)
{
	char tmp[24];
	unsigned int n = 0;

	do {
		unsigned int d = (unsigned int)(v % base);

		tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v && n < sizeof(tmp));
	if (neg)
		tmp[n++] = '-';
	while (width > n) {
		out_c(o, padc);
		width--;
	}
	while (n)
		out_c(o, tmp[--n]);
}

int hyp_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap)
{
	struct out o = { buf, len, 0 };

	for (; *fmt; fmt++) {
		unsigned int width = 0, lng = 0;
		char padc = ' ';
		uint64_t u;
		int64_t s;

		if (*fmt != '%') {
			out_c(&o, *fmt);
			continue;
		}
		fmt++;
		if (*fmt == '0') {
			padc = '0';
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (unsigned int)(*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
			s = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			out_num(&o, s < 0 ? -(uint64_t)s : (uint64_t)s, 10,
				s < 0, width, padc);
			break;
		case 'u':
		case 'x':
			u = lng ? va_arg(ap, uint64_t) :
				  va_arg(ap, unsigned int);
			out_num(&o, u, *fmt == 'u' ? 10 : 16, 0, width, padc);
			break;
		case 'p':
			out_c(&o, '0');
			out_c(&o, 'x');
			out_num(&o, (uintptr_t)va_arg(ap, void *), 16, 0, 0,
				' ');
			break;
		case 'c':
			out_c(&o, (char)va_arg(ap, int));
			break;
		case 's': {
			const char *str = va_arg(ap, const char *);

			if (!str)
				str = "(null)";
			while (*str)
				out_c(&o, *str++);
			break;
		}
		case '%':
			out_c(&o, '%');
			break;
		case '\0':
			fmt--;
			break;
		default:
			out_c(&o, '?');
			break;
		}
	}
	if (len)
		buf[o.pos < len ? o.pos : len - 1] = '\0';
	return (int)o.pos;
}

int hyp_snprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = hyp_vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n;
}
