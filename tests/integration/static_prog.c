/* A statically linked program: no dynamic linker, so no LD_PRELOAD. */
#include <stdio.h>
int main(void)
{
	puts("static program ran");
	return 0;
}
