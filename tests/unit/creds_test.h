/* creds_test: helpers shared by the creds_* unit tests (a header, so it is
 * not a test itself): a private temporary directory removed at exit, a reset
 * of every AWS variable per case (HOME and both shared files point into the
 * temporary directory, IMDS disabled), and a scripted fake service on
 * fakehttp (routes by method and path, hit counters, the last request kept)
 * whose servers are stopped at exit even when a check fails. */
#ifndef LOCKFS_CREDS_TEST_H
#define LOCKFS_CREDS_TEST_H

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "clk.h"
#include "creds.h"
#include "fakehttp.h"
#include "http.h"

#define CT_MAX_SERVICES 32
#define CT_MAX_ROUTES	8

struct ct_route {
	const char *method; /* NULL: any */
	const char *target; /* exact path and query; NULL: any */
	int status;	    /* 0: 200 */
	const char *body;   /* "{EXP}": expiration time, "{N}": hit number */
	int delay_ms;
	int drop;
	int hits; /* atomic */
};

struct ct_service {
	struct ct_route routes[CT_MAX_ROUTES]; /* added under mu */
	int n_routes;			       /* protected by mu */
	const struct clk *clock; /* for {EXP}; NULL: the system clock */
	int64_t exp_offset_ms;	 /* {EXP} = now + this; 0: one hour */
	struct fakehttp *srv;
	pthread_mutex_t mu;
	char last_target[2048];	  /* protected by mu */
	char last_method[16];	  /* protected by mu */
	char last_headers[16384]; /* protected by mu */
	char last_body[16384];	  /* protected by mu */
	int unmatched;		  /* atomic */
};

static char ct_dir[256];
static struct ct_service *ct_services[CT_MAX_SERVICES];
static int ct_n_services;

static inline void ct_rm_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char sub[1536];

	if (!d) {
		unlink(path);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path,
				     e->d_name) >= sizeof(sub))
			continue;
		ct_rm_tree(sub);
	}
	closedir(d);
	rmdir(path);
}

static inline void ct_cleanup(void)
{
	int i;

	for (i = 0; i < ct_n_services; i++) {
		fakehttp_stop(ct_services[i]->srv);
		pthread_mutex_destroy(&ct_services[i]->mu);
		free(ct_services[i]);
	}
	ct_n_services = 0;
	if (ct_dir[0])
		ct_rm_tree(ct_dir);
	ct_dir[0] = '\0';
}

static inline void ct_init(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(ct_dir, sizeof(ct_dir), "%s/lockfs-creds-XXXXXX",
		 tmp && tmp[0] ? tmp : "/tmp");
	CHECK(mkdtemp(ct_dir) != NULL);
	atexit(ct_cleanup);
	CHECK_INT(http_global_init(), 0);
}

/* A path in the temporary directory (four rotating buffers). */
static inline const char *ct_path(const char *name)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, 512, "%s/%s", ct_dir, name);
	return b;
}

static inline void ct_write_mode(const char *name, const char *text, int mode)
{
	const char *p = ct_path(name);
	FILE *f = fopen(p, "w");

	CHECK(f != NULL);
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
	CHECK(chmod(p, (mode_t)mode) == 0);
}

static inline void ct_write(const char *name, const char *text)
{
	ct_write_mode(name, text, 0600);
}

static const char *const ct_vars[] = { "AWS_ACCESS_KEY_ID",
				       "AWS_SECRET_ACCESS_KEY",
				       "AWS_SESSION_TOKEN",
				       "AWS_PROFILE",
				       "AWS_DEFAULT_PROFILE",
				       "AWS_SHARED_CREDENTIALS_FILE",
				       "AWS_CONFIG_FILE",
				       "AWS_WEB_IDENTITY_TOKEN_FILE",
				       "AWS_ROLE_ARN",
				       "AWS_ROLE_SESSION_NAME",
				       "AWS_ENDPOINT_URL_STS",
				       "AWS_ENDPOINT_URL",
				       "AWS_ENDPOINT_URL_DYNAMODB",
				       "AWS_REGION",
				       "AWS_DEFAULT_REGION",
				       "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
				       "AWS_CONTAINER_CREDENTIALS_FULL_URI",
				       "AWS_CONTAINER_AUTHORIZATION_TOKEN",
				       "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
				       "AWS_EC2_METADATA_DISABLED",
				       "AWS_EC2_METADATA_SERVICE_ENDPOINT",
				       NULL };

/* Every case starts here: no AWS variable, HOME and the shared files in the
 * temporary directory (and absent), IMDS disabled. */
static inline void ct_env_reset(void)
{
	int i;

	for (i = 0; ct_vars[i]; i++)
		unsetenv(ct_vars[i]);
	setenv("HOME", ct_dir, 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", ct_path("credentials"), 1);
	setenv("AWS_CONFIG_FILE", ct_path("config"), 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	unlink(ct_path("credentials"));
	unlink(ct_path("config"));
}

/* Copies body into out with every "{EXP}" and "{N}" replaced. */
static inline void ct_render(const struct ct_service *s, const char *body,
			     int hit, char *out, size_t outlen)
{
	const struct clk *c = s->clock ? s->clock : &clk_system;
	int64_t off = s->exp_offset_ms ? s->exp_offset_ms : 3600 * 1000;
	char exp[25], num[16];
	size_t n = 0;

	clk_format_rfc3339_ms(clk_real_ms(c) + off, exp);
	snprintf(num, sizeof(num), "%d", hit);
	while (*body && n + 1 < outlen) {
		const char *put = NULL;

		if (!strncmp(body, "{EXP}", 5)) {
			put = exp;
			body += 5;
		} else if (!strncmp(body, "{N}", 3)) {
			put = num;
			body += 3;
		}
		if (!put) {
			out[n++] = *body++;
			continue;
		}
		for (; *put && n + 1 < outlen; put++)
			out[n++] = *put;
	}
	out[n] = '\0';
}

/* Changes a route field while connection threads may read it. */
#define CT_SET(field, value)                                                   \
	__atomic_store_n(&(field), (value), __ATOMIC_SEQ_CST)
#define CT_GET(field) __atomic_load_n(&(field), __ATOMIC_SEQ_CST)

static inline void ct_handler(const struct fakehttp_request *req,
			      struct fakehttp_response *resp, void *arg)
{
	static __thread char out[16384];
	struct ct_service *s = arg;
	const char *body = NULL;
	int i, hit = 0, found = 0;

	/* Routes are added and changed by the test thread: read under mu. */
	pthread_mutex_lock(&s->mu);
	snprintf(s->last_target, sizeof(s->last_target), "%s", req->target);
	snprintf(s->last_method, sizeof(s->last_method), "%s", req->method);
	snprintf(s->last_headers, sizeof(s->last_headers), "%s", req->headers);
	snprintf(s->last_body, sizeof(s->last_body), "%s", req->body);
	for (i = 0; i < s->n_routes && !found; i++) {
		struct ct_route *r = &s->routes[i];
		int status = CT_GET(r->status);

		if ((r->method && strcmp(r->method, req->method)) ||
		    (r->target && strcmp(r->target, req->target)))
			continue;
		found = 1;
		hit = __atomic_add_fetch(&r->hits, 1, __ATOMIC_SEQ_CST);
		body = CT_GET(r->body);
		resp->status = status ? status : 200;
		resp->delay_ms = CT_GET(r->delay_ms);
		resp->drop = CT_GET(r->drop);
	}
	if (found)
		ct_render(s, body ? body : "", hit, out, sizeof(out));
	pthread_mutex_unlock(&s->mu);
	if (found) {
		resp->body = out;
		return;
	}
	__atomic_add_fetch(&s->unmatched, 1, __ATOMIC_SEQ_CST);
	resp->status = 404;
	resp->body = "no route";
}

static inline struct ct_service *ct_service_start(void)
{
	struct ct_service *s = calloc(1, sizeof(*s));

	CHECK(s != NULL);
	CHECK(ct_n_services < CT_MAX_SERVICES);
	pthread_mutex_init(&s->mu, NULL);
	s->srv = fakehttp_start(ct_handler, s);
	CHECK(s->srv != NULL);
	ct_services[ct_n_services++] = s;
	return s;
}

static inline struct ct_route *ct_route_add(struct ct_service *s,
					    const char *method,
					    const char *target, int status,
					    const char *body)
{
	struct ct_route *r;

	CHECK(s->n_routes < CT_MAX_ROUTES); /* only this thread writes it */
	pthread_mutex_lock(&s->mu);
	r = &s->routes[s->n_routes];
	r->method = method;
	r->target = target;
	r->status = status;
	r->body = body;
	s->n_routes++;
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* {EXP} becomes the clock's now + offset_ms. */
static inline void ct_service_clock(struct ct_service *s,
				    const struct clk *clock, int64_t offset_ms)
{
	pthread_mutex_lock(&s->mu);
	s->clock = clock;
	s->exp_offset_ms = offset_ms;
	pthread_mutex_unlock(&s->mu);
}

static inline int ct_hits(const struct ct_route *r)
{
	return __atomic_load_n(&r->hits, __ATOMIC_SEQ_CST);
}

/* The full URL of a path on the service (rotating buffers). */
static inline const char *ct_url(const struct ct_service *s, const char *path)
{
	static char bufs[4][256];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, 256, "%s%s", fakehttp_url(s->srv), path);
	return b;
}

/* A copy of one of the last-request fields of s (rotating buffers). */
static inline const char *ct_last(struct ct_service *s, const char *field)
{
	static char bufs[4][16384];
	static int next;
	char *b = bufs[next++ % 4];

	pthread_mutex_lock(&s->mu);
	snprintf(b, 16384, "%s", field);
	pthread_mutex_unlock(&s->mu);
	return b;
}

/* A header of the last request into out ("" when absent). */
static inline const char *ct_last_header(struct ct_service *s, const char *name,
					 char *out, size_t outlen)
{
	struct fakehttp_request req;

	memset(&req, 0, sizeof(req));
	pthread_mutex_lock(&s->mu);
	snprintf(req.headers, sizeof(req.headers), "%s", s->last_headers);
	pthread_mutex_unlock(&s->mu);
	if (fakehttp_header(&req, name, out, outlen))
		out[0] = '\0';
	return out;
}

/* One chain, one get, freed: what a fresh process would see. *out must be
 * zeroed or hold credentials (they are cleared first). */
static inline int ct_get_cfg(const struct creds_config *cfg,
			     struct aws_creds *out, struct aws_error *err)
{
	struct creds_chain *ch = creds_chain_new(cfg);
	int rc;

	CHECK(ch != NULL);
	aws_creds_clear(out);
	rc = creds_chain_get(ch, out, err);
	creds_chain_free(ch);
	return rc;
}

static inline int ct_get(struct aws_creds *out, struct aws_error *err)
{
	struct creds_config cfg = { .timeout_ms = 500 };

	return ct_get_cfg(&cfg, out, err);
}

#define CHECK_CONTAINS(hay, needle)                                            \
	do {                                                                   \
		const char *ct_h_ = (hay), *ct_n_ = (needle);                  \
		check_count++;                                                 \
		if (!ct_h_ || !strstr(ct_h_, ct_n_)) {                         \
			fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n",        \
				__FILE__, __LINE__, ct_h_ ? ct_h_ : "(null)",  \
				ct_n_);                                        \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_LACKS(hay, needle)                                               \
	do {                                                                   \
		const char *ct_h_ = (hay), *ct_n_ = (needle);                  \
		check_count++;                                                 \
		if (ct_h_ && strstr(ct_h_, ct_n_)) {                           \
			fprintf(stderr, "%s:%d: \"%s\" holds \"%s\"\n",        \
				__FILE__, __LINE__, ct_h_, ct_n_);             \
			exit(1);                                               \
		}                                                              \
	} while (0)

#endif
