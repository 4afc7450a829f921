/* progcheck.c - can a preload library reach this program?
 *
 * Static binaries have no dynamic linker (no PT_INTERP) to load it, and
 * the dynamic linker ignores LD_PRELOAD with slashes for setuid/setgid
 * programs (AT_SECURE).
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* 1: has PT_INTERP, 0: static, -1: not ELF/unreadable. */
static int elf_has_interp(int fd)
{
	unsigned char id[EI_NIDENT];
	if (pread(fd, id, sizeof(id), 0) != (ssize_t)sizeof(id) || memcmp(id, ELFMAG, SELFMAG))
		return -1;
	if (id[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr eh;
		if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
			return -1;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * (size_t)eh.e_phentsize)) !=
			    (ssize_t)sizeof(ph))
				return -1;
			if (ph.p_type == PT_INTERP)
				return 1;
		}
		return 0;
	}
	if (id[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr eh;
		if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
			return -1;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf32_Phdr ph;
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * (size_t)eh.e_phentsize)) !=
			    (ssize_t)sizeof(ph))
				return -1;
			if (ph.p_type == PT_INTERP)
				return 1;
		}
		return 0;
	}
	return -1;
}

static const char *check_one(const char *path, char *why, size_t len, int depth)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL; /* exec will report it */
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		close(fd);
		snprintf(why, len, "%s is set%cid: the dynamic linker ignores LD_PRELOAD for it (AT_SECURE)",
			 path, (st.st_mode & S_ISUID) ? 'u' : 'g');
		return why;
	}
	char head[256];
	ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
	if (n > 2 && head[0] == '#' && head[1] == '!' && depth == 0) {
		close(fd);
		head[n] = 0;
		char *p = head + 2;
		while (*p == ' ' || *p == '\t')
			p++;
		char *e = p;
		while (*e && *e != ' ' && *e != '\t' && *e != '\n')
			e++;
		*e = 0;
		return *p ? check_one(p, why, len, depth + 1) : NULL;
	}
	int interp = elf_has_interp(fd);
	close(fd);
	if (interp == 0) {
		snprintf(why, len, "%s is statically linked: no dynamic linker loads LD_PRELOAD into it", path);
		return why;
	}
	return NULL;
}

const char *rs_prog_blocker(const char *path, char *why, size_t len)
{
	return check_one(path, why, len, 0);
}
