// SPDX-License-Identifier: MIT
/*
 * PL011 console at HVT_HYP_UART_BASE (QEMU needs no baud setup).  Output
 * is line-buffered per message and serialized by a spinlock once the MMU
 * is on (exclusives need Normal memory for the lock word).
 */
#include "hyp.h"

#define UART_DR		0x00
#define UART_FR		0x18
#define UART_FR_RXFE	(1u << 4)
#define UART_FR_TXFF	(1u << 5)

static inline volatile uint32_t *uart_reg(uint32_t off)
{
	return (volatile uint32_t *)(uintptr_t)(HVT_HYP_UART_BASE + off);
}

void uart_putc(char c)
{
	unsigned int spins = 0;

	/* Bounded: a wedged UART must not hang the hypervisor. */
	while ((*uart_reg(UART_FR) & UART_FR_TXFF) && spins++ < 1000000)
		cpu_relax();
	*uart_reg(UART_DR) = (uint8_t)c;
}

int uart_getc(void)
{
	if (*uart_reg(UART_FR) & UART_FR_RXFE)
		return -1;
	return (int)(*uart_reg(UART_DR) & 0xff);
}

static uint32_t console_lock;
static int console_locking;

void hyp_console_locking(int on)
{
	console_locking = on;
}

static void console_lock_take(void)
{
	unsigned int spins = 0;

	if (!console_locking)
		return;
	/* Acquire: pairs with the release in console_lock_drop(). */
	while (__atomic_exchange_n(&console_lock, 1, __ATOMIC_ACQUIRE)) {
		/* A CPU that died holding the lock must not silence us. */
		if (++spins > 10000000)
			break;
		cpu_relax();
	}
}

static void console_lock_drop(void)
{
	if (console_locking)
		__atomic_store_n(&console_lock, 0, __ATOMIC_RELEASE);
}

void hyp_printf(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int i, n;

	va_start(ap, fmt);
	n = hyp_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	console_lock_take();
	for (i = 0; i < n; i++) {
		if (buf[i] == '\n')
			uart_putc('\r');
		uart_putc(buf[i]);
	}
	console_lock_drop();
}
