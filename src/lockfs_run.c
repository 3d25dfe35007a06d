/* lockfs-run: not written yet. */
#include <stdio.h>
int main(void)
{
	fputs("lockfs-run: not built yet\n", stderr);
	return 1;
}
