// SPDX-License-Identifier: MIT
/*
 * x_close WINDOW-ID: ask an X client to close one of its windows, as a
 * window manager's close button does (a WM_PROTOCOLS client message
 * carrying WM_DELETE_WINDOW), so the program runs its own close path.
 * The KernelShark test uses it: KernelShark saves its session (the data
 * it loaded, as it sees it) when its main window closes, and the headless
 * X server has no window manager to send the message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <X11/Xlib.h>

int main(int argc, char **argv)
{
	Window win;
	Display *d;
	XEvent ev;
	char *end;

	if (argc != 2) {
		fprintf(stderr, "usage: x_close WINDOW-ID (e.g. 0x400007)\n");
		return 2;
	}
	win = (Window)strtoul(argv[1], &end, 0);
	if (*end || !win) {
		fprintf(stderr, "x_close: bad window id '%s'\n", argv[1]);
		return 2;
	}
	d = XOpenDisplay(NULL);
	if (!d) {
		fprintf(stderr, "x_close: cannot open display '%s'\n",
			getenv("DISPLAY") ? getenv("DISPLAY") : "");
		return 1;
	}
	memset(&ev, 0, sizeof(ev));
	ev.xclient.type = ClientMessage;
	ev.xclient.window = win;
	ev.xclient.message_type = XInternAtom(d, "WM_PROTOCOLS", False);
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = (long)XInternAtom(d, "WM_DELETE_WINDOW", False);
	ev.xclient.data.l[1] = CurrentTime;
	if (!XSendEvent(d, win, False, NoEventMask, &ev)) {
		fprintf(stderr, "x_close: cannot send to window 0x%lx\n",
			(unsigned long)win);
		XCloseDisplay(d);
		return 1;
	}
	XSync(d, False);
	XCloseDisplay(d);
	return 0;
}
