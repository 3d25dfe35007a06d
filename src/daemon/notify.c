/* notify: poll wake-ups (see notify.h). Called from whichever thread saw
 * the loss; libfuse serialises the writes to /dev/fuse. */
#define FUSE_USE_VERSION 314
#include "notify.h"

#include <fuse_lowlevel.h>

void notify_poll_wake(void *ph)
{
	fuse_lowlevel_notify_poll(ph);
}

void notify_poll_destroy(void *ph)
{
	fuse_pollhandle_destroy(ph);
}
