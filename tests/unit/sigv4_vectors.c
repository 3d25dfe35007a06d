/* sigv4_vectors: the signer against the AWS SigV4 suites in tests/data/sigv4
 * (see its README.md): every v4/ case (aws-c-auth, header-signing mode) and
 * every classic/ case (the 2015 suite as vendored by botocore). Each stage's
 * output (canonical request, string to sign, signature, Authorization value)
 * is compared byte for byte, and sigv4_sign() must agree with the stages. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "check.h"
#include "sigv4.h"

#define FILE_MAX    (256 * 1024)
#define HEADERS_MAX 32
#define CASES_MAX   64

/* The classic case whose .req lacks its token header (README: defects). */
#define CLASSIC_TOKEN_CASE "get-vanilla-with-session-token"
#define CLASSIC_TOKEN                                                          \
	"6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"

struct text {
	char *data; /* malloc'd, NUL-terminated */
	size_t len;
};

/* Reads a whole file (at most FILE_MAX bytes). False if it does not exist. */
static bool read_text(const char *path, struct text *t)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	t->data = NULL;
	t->len = 0;
	if (!f)
		return false;
	t->data = malloc(FILE_MAX + 1);
	CHECK(t->data);
	n = fread(t->data, 1, FILE_MAX + 1, f);
	CHECK(!ferror(f));
	CHECK(n <= FILE_MAX);
	fclose(f);
	t->data[n] = '\0';
	t->len = n;
	return true;
}

static void must_read(const char *path, struct text *t)
{
	if (!read_text(path, t)) {
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static void expect_bytes(const char *tc, const char *what, const char *got,
			 size_t got_len, const char *want, size_t want_len)
{
	check_count++;
	if (got_len == want_len && !memcmp(got, want, got_len))
		return;
	fprintf(stderr,
		"%s: %s differs\n--- got (%zu bytes)\n%.*s\n"
		"--- want (%zu bytes)\n%.*s\n",
		tc, what, got_len, (int)got_len, got, want_len, (int)want_len,
		want);
	exit(1);
}

/* A raw HTTP request, parsed in place: request line, "Name:value" lines (a
 * line starting with a blank continues the previous value; the line break
 * becomes a space, the signer collapses the rest), a blank line, the body. */
struct request {
	struct text raw;
	char *method, *path, *query;
	struct sigv4_header h[HEADERS_MAX];
	size_t n;
	const char *body;
	size_t body_len;
};

static void parse_request(const char *tc, struct request *r)
{
	char *p = r->raw.data, *end = r->raw.data + r->raw.len;
	char *line_end, *sp, *last_sp, *q;
	char *prev_nul = NULL;

	r->n = 0;
	r->body = "";
	r->body_len = 0;
	line_end = strchr(p, '\n');
	if (line_end)
		*line_end = '\0';
	sp = strchr(p, ' ');
	last_sp = strrchr(p, ' ');
	if (!sp || sp == last_sp) {
		fprintf(stderr, "%s: bad request line\n", tc);
		exit(1);
	}
	*sp = '\0';
	*last_sp = '\0';
	r->method = p;
	r->path = sp + 1;
	q = strchr(r->path, '?');
	r->query = NULL;
	if (q) {
		*q = '\0';
		r->query = q + 1;
	}
	p = line_end ? line_end + 1 : end;
	while (p < end) {
		char *colon;

		line_end = strchr(p, '\n');
		if (!line_end)
			line_end = end;
		if (line_end == p) {
			r->body = p + 1;
			r->body_len = (size_t)(end - (p + 1));
			break;
		}
		*line_end = '\0';
		if (*p == ' ' || *p == '\t') {
			CHECK(prev_nul);
			*prev_nul = ' ';
		} else {
			colon = strchr(p, ':');
			CHECK(colon);
			CHECK(r->n < HEADERS_MAX);
			*colon = '\0';
			r->h[r->n].name = p;
			r->h[r->n].value = colon + 1;
			r->n++;
		}
		prev_nul = line_end;
		p = line_end + 1;
	}
}

static void add_header(struct request *r, const char *name, const char *value)
{
	CHECK(r->n < HEADERS_MAX);
	r->h[r->n].name = name;
	r->h[r->n].value = value;
	r->n++;
}

static const char *find_header(const struct request *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcasecmp(r->h[i].name, name))
			return r->h[i].value;
	return NULL;
}

/* The value of the Authorization line of a signed request ("Authorization:"
 * with or without a space after the colon), NUL-terminated in place. */
static const char *authz_line(const char *tc, struct text *sreq)
{
	char *p = strstr(sreq->data, "\nAuthorization:");
	char *nl;

	if (!p) {
		fprintf(stderr, "%s: no Authorization line\n", tc);
		exit(1);
	}
	p += strlen("\nAuthorization:");
	if (*p == ' ')
		p++;
	nl = strchr(p, '\n');
	if (nl)
		*nl = '\0';
	return p;
}

/* Minimal reader for the flat context.json files: the value of "key" as a
 * string (only \" \\ \/ escapes occur) or a boolean. */
static bool json_string(const char *json, const char *key, char *out,
			size_t outlen)
{
	char pat[64];
	const char *p;
	size_t o = 0;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(json, pat);
	if (!p)
		return false;
	p += strlen(pat);
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	CHECK(*p == ':');
	p++;
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	CHECK(*p == '"');
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\') {
			p++;
			CHECK(*p == '"' || *p == '\\' || *p == '/');
		}
		CHECK(o + 1 < outlen);
		out[o++] = *p;
	}
	CHECK(*p == '"');
	out[o] = '\0';
	return true;
}

static bool json_bool(const char *json, const char *key, bool dflt)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(json, pat);
	if (!p)
		return dflt;
	p += strlen(pat);
	while (*p == ' ' || *p == ':')
		p++;
	if (!strncmp(p, "true", 4))
		return true;
	CHECK(!strncmp(p, "false", 5));
	return false;
}

/* Runs every stage and sigv4_sign() and checks each against the expected
 * texts (want_sig may be NULL when the suite has no separate signature). */
struct expected {
	struct text creq, sts;
	const char *sig;
	const char *authz;
};

static void sign_and_check(const char *tc, const struct request *r,
			   const struct sigv4_creds *creds,
			   const struct sigv4_params *params,
			   const struct expected *want)
{
	struct buf creq = BUF_INIT, sh = BUF_INIT, sts = BUF_INIT;
	struct buf authz = BUF_INIT, authz2 = BUF_INIT;
	char payload[65], scope[128], date8[9], sig[65];
	unsigned char key[32];

	CHECK_INT(sigv4_sha256_hex(r->body, r->body_len, payload), 0);
	CHECK_INT(sigv4_canonical_request(r->method, r->path, r->query, r->h,
					  r->n, payload, params->normalize_path,
					  &creq, &sh),
		  0);
	expect_bytes(tc, "canonical request", creq.data, creq.len,
		     want->creq.data, want->creq.len);
	CHECK_INT(sigv4_scope(params->amz_date, params->region, params->service,
			      scope, sizeof(scope)),
		  0);
	CHECK_INT(sigv4_string_to_sign(params->amz_date, scope, creq.data,
				       creq.len, &sts),
		  0);
	expect_bytes(tc, "string to sign", sts.data, sts.len, want->sts.data,
		     want->sts.len);
	memcpy(date8, params->amz_date, 8);
	date8[8] = '\0';
	CHECK_INT(sigv4_signing_key(creds->secret_access_key, date8,
				    params->region, params->service, key),
		  0);
	CHECK_INT(sigv4_signature(key, sts.data, sts.len, sig), 0);
	if (want->sig)
		expect_bytes(tc, "signature", sig, strlen(sig), want->sig,
			     strlen(want->sig));
	CHECK_INT(sigv4_authorization_value(creds->access_key_id, scope,
					    buf_str(&sh), sig, &authz),
		  0);
	expect_bytes(tc, "Authorization (stages)", authz.data, authz.len,
		     want->authz, strlen(want->authz));
	CHECK_INT(sigv4_sign(r->method, r->path, r->query, r->h, r->n, r->body,
			     r->body_len, creds, params, &authz2),
		  0);
	expect_bytes(tc, "Authorization (sigv4_sign)", authz2.data, authz2.len,
		     want->authz, strlen(want->authz));
	buf_fini(&creq);
	buf_fini(&sh);
	buf_fini(&sts);
	buf_fini(&authz);
	buf_fini(&authz2);
}

static int name_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the subdirectories of dir (NULL if dir is not one). */
static size_t list_dirs(const char *dir, char **names, size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[1024];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		CHECK(n < max);
		names[n] = strdup(e->d_name);
		CHECK(names[n]);
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), name_order);
	return n;
}

static void amz_date_from_iso(const char *iso, char out[17])
{
	struct tm tm = { 0 };
	time_t t;

	CHECK_INT(sscanf(iso, "%4d-%2d-%2dT%2d:%2d:%2dZ", &tm.tm_year,
			 &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
			 &tm.tm_sec),
		  6);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	CHECK(t != (time_t)-1);
	/* Milliseconds must be dropped, not rounded. */
	sigv4_amz_date((long long)t * 1000 + 999, out);
}

static void run_v4_case(const char *root, const char *tc)
{
	char dir[1024], path[1100];
	char akid[64], secret[128], token[1024], region[64], service[64];
	char iso[64], amz_date[17], payload[65];
	struct text ctx, sig, sreq;
	struct request r;
	struct expected want;
	struct sigv4_creds creds;
	struct sigv4_params params;
	bool has_token, omit, sign_body;

	snprintf(dir, sizeof(dir), "%s/v4/%s", root, tc);
	snprintf(path, sizeof(path), "%s/context.json", dir);
	must_read(path, &ctx);
	CHECK(json_string(ctx.data, "access_key_id", akid, sizeof(akid)));
	CHECK(json_string(ctx.data, "secret_access_key", secret,
			  sizeof(secret)));
	has_token = json_string(ctx.data, "token", token, sizeof(token));
	CHECK(json_string(ctx.data, "region", region, sizeof(region)));
	CHECK(json_string(ctx.data, "service", service, sizeof(service)));
	CHECK(json_string(ctx.data, "timestamp", iso, sizeof(iso)));
	omit = json_bool(ctx.data, "omit_session_token", false);
	sign_body = json_bool(ctx.data, "sign_body", false);
	amz_date_from_iso(iso, amz_date);
	CHECK_STR(amz_date, "20150830T123600Z");

	snprintf(path, sizeof(path), "%s/request.txt", dir);
	must_read(path, &r.raw);
	parse_request(tc, &r);
	add_header(&r, "X-Amz-Date", amz_date);
	if (has_token && !omit)
		add_header(&r, "X-Amz-Security-Token", token);
	if (sign_body) {
		CHECK_INT(sigv4_sha256_hex(r.body, r.body_len, payload), 0);
		add_header(&r, "x-amz-content-sha256", payload);
	}

	snprintf(path, sizeof(path), "%s/header-canonical-request.txt", dir);
	must_read(path, &want.creq);
	snprintf(path, sizeof(path), "%s/header-string-to-sign.txt", dir);
	must_read(path, &want.sts);
	snprintf(path, sizeof(path), "%s/header-signature.txt", dir);
	must_read(path, &sig);
	CHECK_INT(sig.len, 64);
	want.sig = sig.data;
	snprintf(path, sizeof(path), "%s/header-signed-request.txt", dir);
	must_read(path, &sreq);
	want.authz = authz_line(tc, &sreq);

	creds.access_key_id = akid;
	creds.secret_access_key = secret;
	/* With omit_session_token the token travels unsigned, added after
	 * signing, so the signer is not told about it. */
	creds.session_token = has_token && !omit ? token : NULL;
	params.region = region;
	params.service = service;
	params.amz_date = amz_date;
	params.normalize_path = json_bool(ctx.data, "normalize", true);
	sign_and_check(tc, &r, &creds, &params, &want);

	free(ctx.data);
	free(r.raw.data);
	free(want.creq.data);
	free(want.sts.data);
	free(sig.data);
	free(sreq.data);
}

/* dir holds <tc>.req and friends. */
static void run_classic_case(const char *dir, const char *tc)
{
	char path[1200];
	struct text sreq, authz;
	struct request r;
	struct expected want;
	struct sigv4_creds creds = { "AKIDEXAMPLE",
				     "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
				     NULL };
	struct sigv4_params params = { "us-east-1", "service", NULL, true };
	struct buf mine = BUF_INIT;
	const char *date, *sreq_authz;
	bool defect = !strcmp(tc, CLASSIC_TOKEN_CASE);

	snprintf(path, sizeof(path), "%s/%s.req", dir, tc);
	must_read(path, &r.raw);
	parse_request(tc, &r);
	if (defect) {
		CHECK(!find_header(&r, "X-Amz-Security-Token"));
		add_header(&r, "X-Amz-Security-Token", CLASSIC_TOKEN);
	}
	creds.session_token = find_header(&r, "X-Amz-Security-Token");
	date = find_header(&r, "X-Amz-Date");
	CHECK(date);
	CHECK_STR(date, "20150830T123600Z");
	params.amz_date = date;

	snprintf(path, sizeof(path), "%s/%s.creq", dir, tc);
	must_read(path, &want.creq);
	snprintf(path, sizeof(path), "%s/%s.sts", dir, tc);
	must_read(path, &want.sts);
	snprintf(path, sizeof(path), "%s/%s.authz", dir, tc);
	must_read(path, &authz);
	want.sig = NULL;
	want.authz = authz.data;
	sign_and_check(tc, &r, &creds, &params, &want);

	/* The signed request carries the same value, except in the case whose
	 * .sreq signature was copied from get-vanilla upstream. */
	snprintf(path, sizeof(path), "%s/%s.sreq", dir, tc);
	must_read(path, &sreq);
	sreq_authz = authz_line(tc, &sreq);
	CHECK_INT(sigv4_sign(r.method, r.path, r.query, r.h, r.n, r.body,
			     r.body_len, &creds, &params, &mine),
		  0);
	if (defect)
		CHECK(strcmp(sreq_authz, buf_str(&mine)) != 0);
	else
		CHECK_STR(sreq_authz, buf_str(&mine));

	buf_fini(&mine);
	free(r.raw.data);
	free(want.creq.data);
	free(want.sts.data);
	free(authz.data);
	free(sreq.data);
}

static size_t run_v4(const char *root)
{
	char dir[1024], *names[CASES_MAX];
	size_t n, i;

	snprintf(dir, sizeof(dir), "%s/v4", root);
	n = list_dirs(dir, names, CASES_MAX);
	for (i = 0; i < n; i++) {
		run_v4_case(root, names[i]);
		free(names[i]);
	}
	return n;
}

/* Cases sit in classic/<tc>/<tc>.req or one level deeper (normalize-path/,
 * post-sts-token/). */
static size_t run_classic(const char *root)
{
	char dir[1024], sub[1100], req[1300], *names[CASES_MAX];
	char *inner[CASES_MAX];
	size_t n, m, i, j, cases = 0;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/classic", root);
	n = list_dirs(dir, names, CASES_MAX);
	for (i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", dir, names[i]);
		snprintf(req, sizeof(req), "%s/%s.req", sub, names[i]);
		if (!stat(req, &st)) {
			run_classic_case(sub, names[i]);
			cases++;
		} else {
			m = list_dirs(sub, inner, CASES_MAX);
			CHECK(m > 0);
			for (j = 0; j < m; j++) {
				char deep[1200];

				snprintf(deep, sizeof(deep), "%s/%s", sub,
					 inner[j]);
				run_classic_case(deep, inner[j]);
				cases++;
				free(inner[j]);
			}
		}
		free(names[i]);
	}
	return cases;
}

int main(void)
{
	const char *root_env = getenv("LOCKFS_TESTDATA");
	char root[900];
	size_t v4, classic;

	CHECK(root_env);
	snprintf(root, sizeof(root), "%s/sigv4", root_env);

	v4 = run_v4(root);
	printf("v4: %zu cases passed\n", v4);
	CHECK_INT(v4, 38);

	classic = run_classic(root);
	printf("classic: %zu cases passed\n", classic);
	CHECK_INT(classic, 34);
	CHECK_DONE();
}
