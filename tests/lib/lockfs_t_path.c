/* lockfs_t_path: lockfs-t's verbs on a path, one system call each:
 * unlink, mkdir, rmdir, rename, link, symlink, mknod, chmod, chown,
 * truncate, utimens, stat, lstat, the xattr calls, statfs and readdir. One
 * thread. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lockfs_t.h"

static int do_stat(const char *path, int follow)
{
	struct stat st;

	if ((follow ? stat : lstat)(path, &st))
		return fail(errno);
	printf("ino=%llu mode=0%o nlink=%llu uid=%u gid=%u size=%lld "
	       "mtime=%lld.%03ld ctime=%lld.%03ld\n",
	       (unsigned long long)st.st_ino, (unsigned)st.st_mode,
	       (unsigned long long)st.st_nlink, (unsigned)st.st_uid,
	       (unsigned)st.st_gid, (long long)st.st_size,
	       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec / 1000000,
	       (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec / 1000000);
	return 0;
}

static int do_listxattr(const char *path)
{
	char buf[65536];
	ssize_t n = listxattr(path, buf, sizeof(buf)), i;

	if (n < 0)
		return fail(errno);
	for (i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		printf("%s\n", buf + i);
	return 0;
}

static int do_getxattr(const char *path, const char *name)
{
	char buf[65536 * 2];
	ssize_t n = getxattr(path, name, buf, sizeof(buf));

	if (n < 0)
		return fail(errno);
	fwrite(buf, 1, (size_t)n, stdout);
	putchar('\n');
	return 0;
}

static int do_readdir(const char *path)
{
	DIR *d;
	struct dirent *de;

	d = opendir(path);
	if (!d)
		return fail(errno);
	errno = 0;
	while ((de = readdir(d)))
		printf("%s\n", de->d_name);
	if (errno) {
		int e = errno;

		closedir(d);
		return fail(e);
	}
	closedir(d);
	return 0;
}

int path_verb(const char *verb, int argc, char **argv)
{
	if (!strcmp(verb, "unlink"))
		return unlink(path_arg(argv[0])) ? fail(errno) : done();
	if (!strcmp(verb, "mkdir")) {
		NEED(2);
		return mkdir(path_arg(argv[0]), parse_mode(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "rmdir"))
		return rmdir(path_arg(argv[0])) ? fail(errno) : done();
	if (!strcmp(verb, "rename")) {
		NEED(2);
		return rename(path_arg(argv[0]), path_arg(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "link")) {
		NEED(2);
		return link(path_arg(argv[0]), path_arg(argv[1])) ? fail(errno)
								  : done();
	}
	if (!strcmp(verb, "symlink")) {
		NEED(2);
		return symlink(path_arg(argv[0]), path_arg(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "mknod")) {
		mode_t type;

		NEED(2);
		if (!strcmp(argv[1], "reg"))
			type = S_IFREG;
		else if (!strcmp(argv[1], "fifo"))
			type = S_IFIFO;
		else
			usage();
		return mknod(path_arg(argv[0]),
			     type | (argc > 2 ? parse_mode(argv[2]) : 0644), 0)
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "chmod")) {
		NEED(2);
		return chmod(path_arg(argv[0]), parse_mode(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "chown")) {
		NEED(3);
		return chown(path_arg(argv[0]), (uid_t)parse_num(argv[1]),
			     (gid_t)parse_num(argv[2]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "truncate")) {
		NEED(2);
		return truncate(path_arg(argv[0]), (off_t)parse_num(argv[1]))
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "utimens"))
		return utimensat(AT_FDCWD, path_arg(argv[0]), NULL, 0)
			       ? fail(errno)
			       : done();
	if (!strcmp(verb, "stat"))
		return do_stat(path_arg(argv[0]), 1);
	if (!strcmp(verb, "lstat"))
		return do_stat(path_arg(argv[0]), 0);
	if (!strcmp(verb, "getxattr")) {
		NEED(2);
		return do_getxattr(path_arg(argv[0]), argv[1]);
	}
	if (!strcmp(verb, "listxattr"))
		return do_listxattr(path_arg(argv[0]));
	if (!strcmp(verb, "setxattr")) {
		struct bytes v;

		NEED(3);
		v = unescape(argv[2]);
		return setxattr(path_arg(argv[0]), argv[1], v.p, v.len, 0)
			       ? fail(errno)
			       : done();
	}
	if (!strcmp(verb, "removexattr")) {
		NEED(2);
		return removexattr(path_arg(argv[0]), argv[1]) ? fail(errno)
							       : done();
	}
	if (!strcmp(verb, "statfs")) {
		struct statfs sf;

		if (statfs(path_arg(argv[0]), &sf))
			return fail(errno);
		printf("namemax=%ld type=0x%lx\n", (long)sf.f_namelen,
		       (unsigned long)sf.f_type);
		return 0;
	}
	if (!strcmp(verb, "readdir"))
		return do_readdir(path_arg(argv[0]));
	return -1;
}
