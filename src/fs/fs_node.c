/* fs_node: inodes: the maps by number and by path ("f:<rel>" or
 * "d:<rel>"), the fixed nodes (root, control files), a second name made by
 * link(), lookup references and their end (forget), and the keys of names
 * (the mount prefix and a relative path). Threads: FUSE workers; functions
 * taking a node need fs->mu, the others take it themselves. */
#include "fs.h"
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void fs_int_fixed_node(struct fs *fs, struct fs_node *n, uint64_t ino,
		       const char *rel, bool is_dir)
{
	n->ino = ino;
	n->rel = strdup(rel);
	n->is_dir = is_dir;
	n->fixed = true;
	imap_put(&fs->by_ino, ino, n);
}

char *fs_int_path_key(const char *rel, bool is_dir)
{
	size_t n = strlen(rel);
	char *k = malloc(n + 3);

	if (k) {
		k[0] = is_dir ? 'd' : 'f';
		k[1] = ':';
		memcpy(k + 2, rel, n + 1);
	}
	return k;
}

void fs_int_unmap_path(struct fs *fs, struct fs_node *n)
{
	char *pk;

	if (!n->in_path_map)
		return;
	pk = fs_int_path_key(n->rel, n->is_dir);
	if (pk && smap_get(&fs->by_path, pk) == n)
		smap_del(&fs->by_path, pk);
	free(pk);
	n->in_path_map = false;
}

/* Removes by_path's entry for rel if it points at n. */
void fs_int_unmap_one(struct fs *fs, struct fs_node *n, const char *rel)
{
	char *pk = fs_int_path_key(rel, n->is_dir);

	if (pk && smap_get(&fs->by_path, pk) == n)
		smap_del(&fs->by_path, pk);
	free(pk);
}

void fs_int_maybe_free_node(struct fs *fs, struct fs_node *n)
{
	if (n->fixed || n->nlookup || n->opens)
		return;
	fs_int_unmap_path(fs, n);
	if (n->alias)
		fs_int_unmap_one(fs, n, n->alias);
	imap_del(&fs->by_ino, n->ino);
	free(n->alias);
	free(n->rel);
	free(n);
}

/* Names a file node has: 2 while a link() alias lives. */
uint32_t fs_int_node_nlink(const struct fs_node *n)
{
	return n->alias ? 2 : 1;
}

/* The node for rel as a file or directory, created if needed; takes a
 * lookup reference when count is set. NULL on ENOMEM. */
struct fs_node *fs_int_get_node(struct fs *fs, const char *rel, bool is_dir,
				bool count)
{
	struct fs_node *n;
	char *pk;

	if (!*rel)
		n = &fs->root;
	else if (!(pk = fs_int_path_key(rel, is_dir)))
		return NULL;
	else {
		n = smap_get(&fs->by_path, pk);
		if (!n) {
			n = calloc(1, sizeof(*n));
			if (!n || !(n->rel = strdup(rel)) ||
			    smap_put(&fs->by_path, pk, n)) {
				if (n)
					free(n->rel);
				free(n);
				free(pk);
				return NULL;
			}
			n->is_dir = is_dir;
			n->in_path_map = true;
			n->ino = fs->next_ino++;
			if (imap_put(&fs->by_ino, n->ino, n)) {
				smap_del(&fs->by_path, pk);
				free(n->rel);
				free(n);
				free(pk);
				return NULL;
			}
		}
		free(pk);
	}
	if (count)
		n->nlookup++;
	return n;
}

struct fs_node *fs_int_find_node(struct fs *fs, uint64_t ino)
{
	return imap_get(&fs->by_ino, ino);
}

char *fs_int_full_key(const struct fs *fs, const char *rel)
{
	size_t n = strlen(rel);
	char *k = malloc(fs->prefix_len + n + 1);

	if (k) {
		memcpy(k, fs->prefix, fs->prefix_len);
		memcpy(k + fs->prefix_len, rel, n + 1);
	}
	return k;
}

void fs_int_entry_changed(struct fs *fs, const char *rel, int subdirs)
{
	const char *slash = strrchr(rel, '/');
	char *dir = slash ? strndup(rel, (size_t)(slash - rel)) : NULL;

	if (slash && !dir)
		return;
	fs_dirstat_changed(fs->dirstat, dir ? dir : "", subdirs,
			   clk_real_ms(fs->host->clk));
	free(dir);
}

/* Copies the node's relative path and kind; -ENOENT if unknown. */
int fs_int_node_info(struct fs *fs, uint64_t ino, char **rel, bool *is_dir,
		     bool *fixed)
{
	struct fs_node *n;
	int rc = 0;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (!n) {
		rc = -ENOENT;
	} else {
		*is_dir = n->is_dir;
		*fixed = n->fixed;
		*rel = strdup(n->rel);
		if (!*rel)
			rc = -ENOMEM;
	}
	pthread_mutex_unlock(&fs->mu);
	return rc;
}

void fs_forget(struct fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct fs_node *n;

	pthread_mutex_lock(&fs->mu);
	n = fs_int_find_node(fs, ino);
	if (n && !n->fixed) {
		n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
		fs_int_maybe_free_node(fs, n);
	}
	pthread_mutex_unlock(&fs->mu);
}
