/* main: not written yet. */
#include <stdio.h>
int main(void)
{
	fputs("lockfs: not built yet\n", stderr);
	return 1;
}
